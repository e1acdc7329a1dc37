//! A bounds-checked little-endian reader over a byte slice. Every read either succeeds or
//! returns [`ModelError::Truncated`] naming what was being read and where; nothing panics.

use crate::error::{ModelError, Result};

/// Reads little-endian values from `bytes`, tracking the absolute file offset.
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    /// The offset of the next byte to read.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left after the read position.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8]> {
        let truncated = || ModelError::Truncated {
            what: what.to_owned(),
            offset: self.pos as u64,
            needed: n,
        };
        let n = usize::try_from(n).map_err(|_| truncated())?;
        if n > self.remaining() {
            return Err(truncated());
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// Fails with `Truncated` unless `n` more bytes are available, without consuming them.
    /// Used to refuse an allocation sized by a count the file cannot back.
    pub(crate) fn ensure(&self, n: u64, what: &str) -> Result<()> {
        if n > self.remaining() as u64 {
            return Err(ModelError::Truncated {
                what: what.to_owned(),
                offset: self.pos as u64,
                needed: n,
            });
        }
        Ok(())
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let b = self.take(N as u64, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }
    pub(crate) fn u16(&mut self, what: &str) -> Result<u16> {
        self.array(what).map(u16::from_le_bytes)
    }
    pub(crate) fn u32(&mut self, what: &str) -> Result<u32> {
        self.array(what).map(u32::from_le_bytes)
    }
    pub(crate) fn u64(&mut self, what: &str) -> Result<u64> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// A GGUF string: u64 length, then that many bytes (UTF-8 expected; invalid sequences are
    /// replaced rather than rejected, as llama.cpp stores raw bytes and some vocabularies carry
    /// stray bytes).
    pub(crate) fn string(&mut self, what: &str) -> Result<String> {
        let len = self.u64(what)?;
        if len > super::limits::MAX_STRING_LEN {
            return Err(ModelError::FileLimit {
                what: format!("length of {what} at offset {}", self.pos - 8),
                value: len,
                limit: super::limits::MAX_STRING_LEN,
            });
        }
        let bytes = self.take(len, what)?;
        Ok(String::from_utf8_lossy(bytes).into_owned())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn reads_are_bounds_checked() {
        let mut c = Cursor::new(&[1, 0, 0, 0, 2]);
        assert_eq!(c.u32("a").unwrap(), 1);
        let err = c.u32("the b field").unwrap_err();
        assert!(
            matches!(err, ModelError::Truncated { offset: 4, needed: 4, ref what } if what == "the b field")
        );
        assert_eq!(c.u8("c").unwrap(), 2);
        assert!(c.take(u64::MAX, "huge").is_err());
    }
}
