//! One module per fuzz target, each with `pub fn run(data: &[u8])`: the whole check, which
//! panics on a finding. Module docs say what each input's bytes mean.

pub mod chat_template;
pub mod dataset;
pub mod gguf_push;
pub mod gguf_slice;
pub mod model_metadata;
pub mod redactor;
pub mod serve_request;
pub mod stream_parser;

/// At most this many fuzzer-chosen cut points per input: enough to land cuts inside every
/// interesting spot of a short body (a UTF-8 character, a CR LF pair, a length prefix).
pub const MAX_CUTS: usize = 7;

/// Splits `data` into (chunks, body): byte 0 says how many cut lengths follow (mod 8), each a
/// little-endian `u16`; the body (everything after them) is cut at those lengths in turn and
/// whatever remains is the last chunk. Empty chunks are kept: a network read may return none.
pub fn chunks(data: &[u8]) -> (Vec<&[u8]>, &[u8]) {
    let Some((&n, rest)) = data.split_first() else {
        return (Vec::new(), &[]);
    };
    let n = usize::from(n) % (MAX_CUTS + 1);
    let header_len = (2 * n).min(rest.len());
    let (lens, body) = rest.split_at(header_len);
    let mut out = Vec::with_capacity(n + 1);
    let mut left = body;
    for pair in lens.chunks_exact(2) {
        let len = usize::from(u16::from_le_bytes([pair[0], pair[1]])).min(left.len());
        let (now, later) = left.split_at(len);
        out.push(now);
        left = later;
    }
    out.push(left);
    (out, body)
}

#[cfg(test)]
mod tests {
    use super::chunks;

    #[test]
    fn cuts_cover_the_body_in_order() {
        let data = [2, 1, 0, 0, 0, b'a', b'b', b'c'];
        let (parts, body) = chunks(&data);
        assert_eq!(body, b"abc");
        assert_eq!(parts, vec![&b"a"[..], b"", b"bc"]);
        assert_eq!(parts.concat(), body);
    }
}
