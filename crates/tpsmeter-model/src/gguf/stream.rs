//! A push parser for GGUF: feed it the file in chunks of any size (as a download delivers
//! them) and it reports the header once complete, then each tensor's bytes as soon as the
//! last of them arrives, in file order. Only the header and at most one partly received
//! tensor are buffered, so a model can stream into GPU buffers without being held twice.
//!
//! The model ends where the header says its last tensor (and that tensor's alignment
//! padding) ends, [`GgufHeader::model_len`]: input past that point is not read, so a file
//! with anything appended loads as the model alone, and [`GgufStreamParser::wants_more`]
//! tells the caller when to stop its download.
//!
//! A tensor that arrives inside a single chunk is passed as a slice of that chunk (no copy).

use super::header::GgufHeader;
use super::limits::MAX_HEADER_BYTES;
use super::tensor_info::TensorInfo;
use crate::error::{ModelError, Result};

/// What the parser reports to its sink.
#[derive(Debug)]
pub enum GgufEvent<'a> {
    /// Header, metadata and tensor infos are complete (reported once, before any tensor).
    Header(&'a GgufHeader),
    /// The next bytes of the model, in file order: every byte from the first to the model's
    /// end is reported once (the header's when the header completes), none after it. For a
    /// checksum or a copy of exactly the model.
    Bytes(&'a [u8]),
    /// All bytes of one tensor have arrived.
    Tensor {
        /// Index into `header.tensors`.
        index: usize,
        info: &'a TensorInfo,
        bytes: &'a [u8],
    },
}

/// Progress through the data section.
#[derive(Debug, Default)]
struct DataState {
    /// Absolute file offset of the next byte to arrive.
    pos: u64,
    /// Absolute file offset where the model ends ([`GgufHeader::model_len`]): `pos` stops
    /// there.
    end: u64,
    /// Tensor indices sorted by offset.
    order: Vec<usize>,
    /// Position in `order` of the tensor being received.
    next: usize,
    /// Bytes of the current tensor received in earlier chunks.
    pending: Vec<u8>,
}

/// Incremental GGUF parser. See the module docs.
#[derive(Debug, Default)]
pub struct GgufStreamParser {
    /// Bytes received before the header was complete.
    head: Vec<u8>,
    /// Re-parse the header only once `head` holds this many bytes: each attempt starts from
    /// the beginning, so attempts are spaced geometrically (amortised linear work).
    next_attempt: usize,
    header: Option<GgufHeader>,
    data: DataState,
    failed: bool,
}

impl GgufStreamParser {
    /// A parser expecting the first byte of a file.
    pub fn new() -> Self {
        Self::default()
    }

    /// The header, once complete.
    pub fn header(&self) -> Option<&GgufHeader> {
        self.header.as_ref()
    }

    /// Bytes taken so far: every byte until the header is complete, then up to the model's
    /// end, not beyond.
    pub fn bytes_received(&self) -> u64 {
        if self.header.is_some() {
            self.data.pos
        } else {
            self.head.len() as u64
        }
    }

    /// Whether every tensor has been reported.
    pub fn is_complete(&self) -> bool {
        self.header.is_some() && self.data.next == self.data.order.len()
    }

    /// Bytes of the file known to belong to the model, reported as [`GgufEvent::Bytes`]:
    /// none until the header is complete (the model's end is unknown before), then all that
    /// arrived up to that end.
    pub fn model_bytes(&self) -> u64 {
        if self.header.is_some() {
            self.data.pos
        } else {
            0
        }
    }

    /// Whether more input can belong to the model: false once its last byte has arrived,
    /// when the caller should stop reading (the rest of the input would be ignored).
    pub fn wants_more(&self) -> bool {
        self.header.is_none() || self.data.pos < self.data.end
    }

    /// Feeds the next chunk of the file. `sink` receives the events the chunk completes; an
    /// error from it stops parsing and is returned. After any error the parser refuses
    /// further input.
    pub fn push<E: From<ModelError>>(
        &mut self,
        chunk: &[u8],
        sink: &mut dyn FnMut(GgufEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.failed {
            return Err(ModelError::StreamState {
                reason: "input after an earlier error".into(),
            }
            .into());
        }
        let result = self.push_inner(chunk, sink);
        if result.is_err() {
            self.failed = true;
        }
        result
    }

    fn push_inner<E: From<ModelError>>(
        &mut self,
        chunk: &[u8],
        sink: &mut dyn FnMut(GgufEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if let Some(header) = &self.header {
            return feed_data(header, &mut self.data, chunk, sink);
        }
        self.head.extend_from_slice(chunk);
        if self.head.len() < self.next_attempt {
            return Ok(());
        }
        match GgufHeader::parse(&self.head) {
            Ok(header) => {
                sink(GgufEvent::Header(&header))?;
                let mut order: Vec<usize> = (0..header.tensors.len()).collect();
                order.sort_by_key(|&i| header.tensors[i].offset);
                self.data = DataState {
                    order,
                    end: header.model_len(),
                    ..DataState::default()
                };
                let head = std::mem::take(&mut self.head);
                let header = self.header.insert(header);
                feed_data(header, &mut self.data, &head, sink)
            }
            Err(ModelError::Truncated { offset, needed, .. }) => {
                let least = offset.saturating_add(needed);
                if least > MAX_HEADER_BYTES {
                    return Err(ModelError::FileLimit {
                        what: "GGUF header size".into(),
                        value: least,
                        limit: MAX_HEADER_BYTES,
                    }
                    .into());
                }
                self.next_attempt = (least as usize).max(self.head.len().saturating_mul(2));
                Ok(())
            }
            Err(other) => Err(other.into()),
        }
    }

    /// The input has ended: parses a header still held back (the parser re-parses only as
    /// its buffer doubles), so that [`Self::model_bytes`] counts every byte of the model
    /// that arrived. [`Self::finish`] does this itself.
    pub fn flush<E: From<ModelError>>(
        &mut self,
        sink: &mut dyn FnMut(GgufEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.header.is_some() {
            return Ok(());
        }
        self.next_attempt = 0;
        self.push(&[], sink)
    }

    /// Ends the stream: returns the header if every tensor arrived, else the error a
    /// truncated file deserves. `sink` receives what the parser still held back (a header
    /// whose re-parse was deferred, and the tensors after it).
    pub fn finish<E: From<ModelError>>(
        mut self,
        sink: &mut dyn FnMut(GgufEvent<'_>) -> Result<(), E>,
    ) -> Result<GgufHeader, E> {
        if self.failed {
            return Err(ModelError::StreamState {
                reason: "finish after an earlier error".into(),
            }
            .into());
        }
        if self.header.is_none() {
            // Parse now whatever arrived; a short file gives Truncated with section/offset.
            self.next_attempt = 0;
            self.push_inner(&[], sink)?;
            if self.header.is_none() {
                GgufHeader::parse(&self.head)?;
            }
        }
        let Some(header) = self.header.take() else {
            return Err(ModelError::StreamState {
                reason: "header did not complete".into(),
            }
            .into());
        };
        if let Some(&i) = self.data.order.get(self.data.next) {
            let t = &header.tensors[i];
            // Checked: a hostile offset near u64::MAX must give an error, not an overflow.
            let end = header
                .data_offset
                .checked_add(t.offset)
                .and_then(|start| start.checked_add(t.n_bytes))
                .ok_or_else(|| out_of_range(t))?;
            return Err(ModelError::Truncated {
                what: format!("data of tensor {:?}", t.name),
                offset: self.data.pos,
                needed: end.saturating_sub(self.data.pos),
            }
            .into());
        }
        Ok(header)
    }

    /// Parses a whole file from `reader` in 1 MiB chunks (native convenience).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn parse_reader<E: From<ModelError>>(
        mut reader: impl std::io::Read,
        sink: &mut dyn FnMut(GgufEvent<'_>) -> Result<(), E>,
    ) -> Result<GgufHeader, E> {
        let mut parser = Self::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = reader.read(&mut buf).map_err(|e| ModelError::StreamState {
                reason: format!("read failed: {e}"),
            })?;
            if n == 0 {
                return parser.finish(sink);
            }
            parser.push(&buf[..n], sink)?;
        }
    }
}

/// Routes `data` (the bytes at absolute offset `st.pos`) to the tensors it belongs to. What
/// lies past the model's end is dropped unread.
fn feed_data<E: From<ModelError>>(
    header: &GgufHeader,
    st: &mut DataState,
    mut data: &[u8],
    sink: &mut dyn FnMut(GgufEvent<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let room = st.end - st.pos;
    if data.len() as u64 > room {
        data = &data[..room as usize];
    }
    if data.is_empty() {
        return Ok(());
    }
    sink(GgufEvent::Bytes(data))?;
    while !data.is_empty() {
        let Some(&index) = st.order.get(st.next) else {
            // The last tensor's alignment padding: nothing to deliver.
            st.pos += data.len() as u64;
            return Ok(());
        };
        let info = &header.tensors[index];
        let start = header
            .data_offset
            .checked_add(info.offset)
            .ok_or_else(|| out_of_range(info))?;
        let end = start
            .checked_add(info.n_bytes)
            .ok_or_else(|| out_of_range(info))?;
        if st.pos < start {
            let skip = (start - st.pos).min(data.len() as u64) as usize;
            data = &data[skip..];
            st.pos += skip as u64;
            continue;
        }
        let take = (end - st.pos).min(data.len() as u64) as usize;
        let (now, rest) = data.split_at(take);
        st.pos += take as u64;
        data = rest;
        if st.pending.is_empty() && take as u64 == info.n_bytes {
            st.next += 1;
            sink(GgufEvent::Tensor {
                index,
                info,
                bytes: now,
            })?;
        } else {
            // No reserve for the declared size: the buffer grows with the bytes that really
            // arrive, so a header declaring a huge tensor cannot make us allocate up-front.
            // Growth that the allocator refuses is an error, not an abort: in WebAssembly an
            // abort is a trap that leaves the loader's JS object unusable.
            st.pending
                .try_reserve(now.len())
                .map_err(|_| ModelError::HostOutOfMemory {
                    tensor: info.name.clone(),
                    bytes: info.n_bytes,
                })?;
            st.pending.extend_from_slice(now);
            if st.pos == end {
                st.next += 1;
                sink(GgufEvent::Tensor {
                    index,
                    info,
                    bytes: &st.pending,
                })?;
                st.pending.clear();
            }
        }
    }
    Ok(())
}

fn out_of_range(info: &TensorInfo) -> ModelError {
    ModelError::TensorOutOfRange {
        tensor: info.name.clone(),
        offset: info.offset,
        size: info.n_bytes,
        data_len: u64::MAX,
    }
}
