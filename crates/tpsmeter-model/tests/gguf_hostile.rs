//! Hostile GGUF input: truncations at every section boundary and every offset, absurd counts
//! and lengths, bad offsets, overlapping tensors, unknown types, overflowing dims, and random
//! mutations. Each must give a typed error (never a panic), naming the culprit.

#![allow(clippy::unwrap_used)]

mod gguf_fixture;

use gguf_fixture::{mark, small_gguf};
use proptest::prelude::*;
use tpsmeter_model::ModelError;
use tpsmeter_model::gguf::limits::{MAX_ARRAY_LEN, MAX_NESTING_DEPTH, MAX_STRING_LEN};
use tpsmeter_model::gguf::writer::Layout;
use tpsmeter_model::gguf::{
    GgufEvent, GgufFile, GgufStreamParser, GgufWriter, MetadataArray, MetadataValue,
};

fn parse_err(bytes: &[u8]) -> ModelError {
    GgufFile::parse(bytes).unwrap_err()
}

/// Parses through the streaming parser in 5-byte chunks; returns the first error.
fn stream_err(bytes: &[u8]) -> ModelError {
    let mut parser = GgufStreamParser::new();
    let mut sink = |_: GgufEvent<'_>| Ok::<(), ModelError>(());
    for chunk in bytes.chunks(5) {
        if let Err(e) = parser.push(chunk, &mut sink) {
            return e;
        }
    }
    parser.finish(&mut sink).unwrap_err()
}

fn patch_u64(bytes: &mut [u8], at: usize, v: u64) {
    bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn patch_u32(bytes: &mut [u8], at: usize, v: u32) {
    bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn truncation_at_each_header_section_names_its_offset() {
    let (bytes, layout) = small_gguf();
    for (what, at) in layout
        .marks
        .iter()
        .filter(|(_, at)| *at < layout.data_offset)
    {
        for err in [parse_err(&bytes[..*at]), stream_err(&bytes[..*at])] {
            match err {
                ModelError::Truncated { offset, .. } => {
                    assert_eq!(offset as usize, *at, "cut before {what}")
                }
                other => panic!("cut before {what}: {other}"),
            }
        }
    }
    // A cut inside a value names the key being read.
    let at = mark(&layout, "metadata value of tokenizer.ggml.tokens") + 20;
    let ModelError::Truncated { what, .. } = parse_err(&bytes[..at]) else {
        panic!("not a truncation");
    };
    assert!(what.contains("tokenizer.ggml.tokens"), "{what}");
}

#[test]
fn truncation_in_the_data_section_names_the_tensor() {
    let (bytes, layout) = small_gguf();
    let at = mark(&layout, "tensor data b.weight") + 10;
    match parse_err(&bytes[..at]) {
        ModelError::TensorOutOfRange { tensor, .. } => assert_eq!(tensor, "b.weight"),
        other => panic!("{other}"),
    }
    match stream_err(&bytes[..at]) {
        ModelError::Truncated { what, .. } => assert!(what.contains("b.weight"), "{what}"),
        other => panic!("{other}"),
    }
}

#[test]
fn truncation_at_every_offset_is_an_error() {
    let (bytes, _) = small_gguf();
    for cut in 0..bytes.len() {
        assert!(
            GgufFile::parse(&bytes[..cut]).is_err(),
            "cut at {cut} parsed"
        );
        stream_err(&bytes[..cut]);
    }
    GgufFile::parse(&bytes).unwrap();
}

#[test]
fn bad_magic_and_versions() {
    let (mut bytes, _) = small_gguf();
    bytes[0] = b'X';
    assert!(matches!(parse_err(&bytes), ModelError::BadMagic { found } if &found == b"XGUF"));
    // A web page where a model should be says so; binary garbage is shown in hex.
    let page = parse_err(b"<!doctype html><html><body>not found</body></html>").to_string();
    assert!(
        page.contains(r#"starts with "<!do""#) && page.contains("web page"),
        "{page}"
    );
    let binary = parse_err(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0]).to_string();
    assert!(binary.contains("[7f, 45, 4c, 46]"), "{binary}");
    for v in [0, 1, 4, 0x0300_0000] {
        let (mut bytes, _) = small_gguf();
        patch_u32(&mut bytes, 4, v);
        assert!(
            matches!(parse_err(&bytes), ModelError::UnsupportedVersion { version } if version == v)
        );
    }
}

/// Counts and lengths past the reader's caps are a malformed file (`InvalidModel`), not a
/// GPU limit: the browser once told the user "the model needs more than this GPU adapter
/// allows … Try a smaller model" for a tensor count of 2^64 - 1.
#[test]
fn absurd_counts_hit_the_caps() {
    for (at, what) in [(8, "tensor count"), (16, "metadata count")] {
        let (mut bytes, _) = small_gguf();
        patch_u64(&mut bytes, at, u64::MAX);
        let e = parse_err(&bytes);
        assert_eq!(e.kind(), "InvalidModel", "{e}");
        assert!(e.to_string().starts_with("malformed GGUF file: "), "{e}");
        match e {
            ModelError::FileLimit { what: w, value, .. } => {
                assert_eq!((w.as_str(), value), (what, u64::MAX))
            }
            other => panic!("{what}: {other}"),
        }
        assert!(matches!(stream_err(&bytes), ModelError::FileLimit { .. }));
    }
    // Within the cap but more than the file holds: the reader runs into the data section or
    // the end of the input, and fails there (the allocation bound is gguf_alloc.rs's test).
    let (mut bytes, _) = small_gguf();
    patch_u64(&mut bytes, 8, 60_000);
    let e = parse_err(&bytes);
    assert!(
        !matches!(e, ModelError::FileLimit { ref what, .. } if what == "tensor count"),
        "{e}"
    );
}

#[test]
fn huge_string_and_array_lengths() {
    let (bytes, layout) = small_gguf();
    let key_at = mark(&layout, "metadata key u8");
    let mut b = bytes.clone();
    patch_u64(&mut b, key_at, u64::MAX);
    assert!(matches!(
        parse_err(&b),
        ModelError::FileLimit {
            value: u64::MAX,
            ..
        }
    ));
    let mut b = bytes.clone();
    patch_u64(&mut b, key_at, MAX_STRING_LEN);
    assert!(matches!(parse_err(&b), ModelError::Truncated { .. }));

    // Array value: type u32 (ARRAY) then element type u32, then the count.
    let count_at = mark(&layout, "metadata value of tokenizer.ggml.scores") + 8;
    for (count, limit_hit) in [
        (u64::MAX, true),
        (MAX_ARRAY_LEN + 1, true),
        (MAX_ARRAY_LEN, false),
    ] {
        let mut b = bytes.clone();
        patch_u64(&mut b, count_at, count);
        match parse_err(&b) {
            ModelError::FileLimit { what, .. } if limit_hit => {
                assert!(what.contains("tokenizer.ggml.scores"), "{what}")
            }
            ModelError::Truncated { .. } if !limit_hit => {}
            other => panic!("count {count}: {other}"),
        }
    }
}

#[test]
fn unknown_value_types_and_deep_nesting() {
    let (mut bytes, layout) = small_gguf();
    patch_u32(&mut bytes, mark(&layout, "metadata value of f32"), 13);
    assert!(
        matches!(parse_err(&bytes), ModelError::UnknownValueType { key, id: 13 } if key == "f32")
    );

    let mut deep = MetadataArray::U8(vec![1]);
    for _ in 0..=MAX_NESTING_DEPTH {
        deep = MetadataArray::Array(vec![deep]);
    }
    let mut w = GgufWriter::new();
    w.metadata("deep", MetadataValue::Array(deep));
    match parse_err(&w.to_bytes()) {
        ModelError::FileLimit { what, .. } => assert!(what.contains("deep"), "{what}"),
        other => panic!("{other}"),
    }
}

/// Offset of field `field` in the tensor info of `name` (fixture tensors have 2 dims except
/// c.bias with 1).
fn info_field(layout: &Layout, name: &str, field: &str) -> usize {
    let start = mark(layout, &format!("tensor info {name}"));
    let n_dims = if name == "c.bias" { 1 } else { 2 };
    let after_name = start + 8 + name.len();
    match field {
        "n_dims" => after_name,
        "dims" => after_name + 4,
        "type" => after_name + 4 + 8 * n_dims,
        "offset" => after_name + 4 + 8 * n_dims + 4,
        _ => unreachable!(),
    }
}

#[test]
fn bad_tensor_infos_name_the_tensor() {
    let (bytes, layout) = small_gguf();
    let with = |name: &str, field: &str, patch: &dyn Fn(&mut [u8], usize)| {
        let mut b = bytes.clone();
        patch(&mut b, info_field(&layout, name, field));
        parse_err(&b)
    };

    let e = with("b.weight", "offset", &|b, at| patch_u64(b, at, 1 << 20));
    assert!(
        matches!(e, ModelError::TensorOutOfRange { ref tensor, .. } if tensor == "b.weight"),
        "{e}"
    );
    let e = with("b.weight", "offset", &|b, at| {
        patch_u64(b, at, u64::MAX - 63)
    });
    assert!(matches!(e, ModelError::TensorOutOfRange { .. }), "{e}");
    let e = with("b.weight", "offset", &|b, at| patch_u64(b, at, 0));
    assert!(
        matches!(e, ModelError::TensorsOverlap { ref second, .. } if second == "b.weight" || second == "a.weight"),
        "{e}"
    );
    let e = with("b.weight", "offset", &|b, at| patch_u64(b, at, 130));
    assert!(
        matches!(e, ModelError::TensorMisaligned { offset: 130, .. }),
        "{e}"
    );
    let e = with("a.weight", "type", &|b, at| patch_u32(b, at, 77));
    assert!(
        matches!(e, ModelError::UnknownTensorType { ref tensor, id: 77 } if tensor == "a.weight"),
        "{e}"
    );
    let e = with("a.weight", "n_dims", &|b, at| patch_u32(b, at, 5));
    assert!(matches!(e, ModelError::FileLimit { value: 5, .. }), "{e}");
    let e = with("a.weight", "n_dims", &|b, at| patch_u32(b, at, u32::MAX));
    assert!(matches!(e, ModelError::FileLimit { .. }), "{e}");
    let e = with("a.weight", "dims", &|b, at| {
        patch_u64(b, at, 1 << 32);
        patch_u64(b, at + 8, 1 << 32);
    });
    assert!(
        matches!(e, ModelError::BadTensorShape { ref tensor, .. } if tensor == "a.weight"),
        "{e}"
    );
    let e = with("a.weight", "dims", &|b, at| patch_u64(b, at, 0));
    assert!(matches!(e, ModelError::BadTensorShape { .. }), "{e}");
    // Q8_0 rows must be whole 32-weight blocks.
    let e = with("b.weight", "dims", &|b, at| patch_u64(b, at, 33));
    assert!(
        matches!(e, ModelError::BadTensorShape { ref reason, .. } if reason.contains("block")),
        "{e}"
    );
}

/// A tensor offset near `u64::MAX` in a file cut anywhere in its data section is an
/// error in both readers, never an arithmetic overflow (found by the proptest below).
#[test]
fn huge_offsets_in_a_cut_file_are_errors() {
    let (bytes, layout) = small_gguf();
    let header = GgufFile::parse(&bytes).unwrap().header;
    for name in ["a.weight", "b.weight"] {
        let n_bytes = header
            .tensors
            .iter()
            .find(|t| t.name == name)
            .unwrap()
            .n_bytes;
        // `offset + n_bytes` fits in a u64 (the header accepts it); adding the data
        // section's start does not.
        let a = header.alignment;
        let top = (u64::MAX - n_bytes) / a * a;
        assert!(u64::MAX - top - n_bytes < header.data_offset);
        for offset in [top, top - a, top - 64 * a] {
            let mut b = bytes.clone();
            patch_u64(&mut b, info_field(&layout, name, "offset"), offset);
            for cut in layout.data_offset..=b.len() {
                assert!(GgufFile::parse(&b[..cut]).is_err(), "{name} cut at {cut}");
                let e = stream_err(&b[..cut]);
                assert!(
                    matches!(
                        e,
                        ModelError::TensorOutOfRange { .. } | ModelError::Truncated { .. }
                    ),
                    "{name} cut at {cut}: {e}"
                );
            }
        }
    }
}

#[test]
fn bad_alignment_and_duplicates() {
    for a in [0u32, 3, 1 << 20] {
        let mut w = GgufWriter::new();
        w.alignment(a);
        assert!(
            matches!(parse_err(&w.to_bytes()), ModelError::BadAlignment { .. }),
            "alignment {a}"
        );
    }
    let mut w = GgufWriter::new();
    w.metadata("k", MetadataValue::U8(1))
        .metadata("k", MetadataValue::U8(2));
    assert!(matches!(parse_err(&w.to_bytes()), ModelError::DuplicateKey { key } if key == "k"));
    let mut w = GgufWriter::new();
    w.tensor_f32("t", &[1], &[1.0]).unwrap();
    w.tensor_f32("t", &[1], &[2.0]).unwrap();
    assert!(
        matches!(parse_err(&w.to_bytes()), ModelError::DuplicateTensor { tensor } if tensor == "t")
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Random byte edits of the fixture (overwrites with interesting values, truncation)
    /// never panic, in either reader.
    #[test]
    fn random_mutations_never_panic(
        edits in prop::collection::vec((any::<prop::sample::Index>(), prop::sample::select(vec![0u8, 1, 0x7f, 0x80, 0xff]), 1usize..9), 1..4),
        cut in any::<prop::sample::Index>(),
        do_cut in any::<bool>(),
    ) {
        let (mut bytes, _) = small_gguf();
        for (at, value, len) in edits {
            let at = at.index(bytes.len());
            let end = (at + len).min(bytes.len());
            bytes[at..end].fill(value);
        }
        if do_cut {
            bytes.truncate(cut.index(bytes.len()));
        }
        let slice = GgufFile::parse(&bytes).map(|f| f.header.tensors.len());
        let mut parser = GgufStreamParser::new();
        let mut sink = |_: GgufEvent<'_>| Ok::<(), ModelError>(());
        let streamed = parser
            .push(&bytes, &mut sink)
            .and_then(|()| parser.finish(&mut sink))
            .map(|h| h.tensors.len());
        // Both readers agree on whether the file is valid.
        prop_assert_eq!(slice.is_ok(), streamed.is_ok());
    }
}
