//! The GGUF reader on well-formed input: every value type round-trips through the writer,
//! typed getters, tensor bytes from a slice and from the streaming parser under every
//! chunking, and the real SmolLM2 file when present.

#![allow(clippy::unwrap_used)]

mod gguf_fixture;

use gguf_fixture::small_gguf;
use tpsmeter_model::ModelError;
use tpsmeter_model::gguf::{GgmlType, GgufEvent, GgufFile, GgufStreamParser, MetadataArray};

#[test]
fn every_value_type_round_trips() {
    let (bytes, _) = small_gguf();
    let file = GgufFile::parse(&bytes).unwrap();
    let md = &file.header.metadata;
    assert_eq!(file.header.version, 3);
    assert_eq!(file.header.alignment, 64);
    assert_eq!(file.header.architecture().unwrap(), "llama");
    assert_eq!(md.get_u32("u8").unwrap(), 200);
    assert_eq!(md.get_u32("u16").unwrap(), 60_000);
    assert_eq!(md.get_u32("llama.block_count").unwrap(), 2);
    assert_eq!(md.get_u64("u64").unwrap(), 1 << 40);
    assert_eq!(md.get_f32("f32").unwrap(), 1.5);
    assert_eq!(md.get_f32("f64").unwrap(), 0.25);
    assert!(md.get_bool("bool").unwrap());
    assert_eq!(
        md.get_str_array("tokenizer.ggml.tokens").unwrap(),
        ["<s>", "héllo", ""]
    );
    assert_eq!(
        md.get_f32_array("tokenizer.ggml.scores").unwrap(),
        [0.0, -1.0, -2.5]
    );
    let MetadataArray::Array(nested) = md.get_array("nested").unwrap() else {
        panic!("nested is not an array of arrays");
    };
    assert_eq!(nested[0], MetadataArray::I32(vec![1, 2, 3]));
    assert_eq!(
        nested[2],
        MetadataArray::Array(vec![MetadataArray::Bool(vec![true, false])])
    );
    // Negative integers are not unsigned; wrong types and absent keys name the key.
    assert!(matches!(md.get_u32("i8"), Err(ModelError::MetadataType { key, .. }) if key == "i8"));
    assert!(matches!(
        md.get_u32("u64"),
        Err(ModelError::BadMetadata { .. })
    ));
    assert!(matches!(
        md.get_str("f32"),
        Err(ModelError::MetadataType { .. })
    ));
    assert!(
        matches!(md.get_u32("absent"), Err(ModelError::MissingMetadata { key }) if key == "absent")
    );
    assert_eq!(md.opt_u32("absent").unwrap(), None);
}

#[test]
fn tensors_are_read_from_their_aligned_offsets() {
    let (bytes, layout) = small_gguf();
    let file = GgufFile::parse(&bytes).unwrap();
    assert_eq!(file.header.data_offset as usize, layout.data_offset);
    assert_eq!(file.header.data_offset % 64, 0);
    let a = file.tensor_info("a.weight").unwrap();
    assert_eq!(
        (a.ty, a.dims.as_slice(), a.n_rows()),
        (GgmlType::F32, &[8u64, 3][..], 3)
    );
    let values = file.dequantize("a.weight").unwrap();
    assert_eq!(values, (0..24).map(|i| i as f32 - 3.5).collect::<Vec<_>>());
    let b = file.tensor_info("b.weight").unwrap();
    assert_eq!(b.offset % 64, 0);
    assert_eq!(b.n_bytes, 68);
    let c = file.dequantize("c.bias").unwrap();
    assert_eq!(c[9], 2.25);
    assert!(matches!(
        file.tensor_bytes("absent"),
        Err(ModelError::MissingTensor { name }) if name == "absent"
    ));
}

/// Feeds `bytes` in chunks of the sizes `sizes` cycles through; returns the tensors in
/// delivery order.
fn stream(bytes: &[u8], sizes: &[usize]) -> Vec<(String, Vec<u8>)> {
    let mut parser = GgufStreamParser::new();
    let mut got = Vec::new();
    let mut saw_header = false;
    let mut sink = |ev: GgufEvent<'_>| {
        match ev {
            GgufEvent::Header(h) => {
                assert!(!saw_header, "header reported twice");
                saw_header = true;
                assert_eq!(h.tensors.len(), 3);
            }
            GgufEvent::Tensor { info, bytes, .. } => {
                assert!(saw_header, "tensor before header");
                got.push((info.name.clone(), bytes.to_vec()));
            }
            GgufEvent::Bytes(_) => {}
        }
        Ok(())
    };
    let mut rest = bytes;
    let mut i = 0;
    while !rest.is_empty() {
        let n = sizes[i % sizes.len()].min(rest.len());
        parser.push::<ModelError>(&rest[..n], &mut sink).unwrap();
        rest = &rest[n..];
        i += 1;
    }
    parser.finish(&mut sink).unwrap();
    got
}

#[test]
fn streaming_delivers_the_same_bytes_under_any_chunking() {
    let (bytes, _) = small_gguf();
    let file = GgufFile::parse(&bytes).unwrap();
    let want: Vec<(String, Vec<u8>)> = ["a.weight", "b.weight", "c.bias"]
        .iter()
        .map(|n| (n.to_string(), file.tensor_bytes(n).unwrap().to_vec()))
        .collect();
    for sizes in [
        vec![bytes.len()],
        vec![1],
        vec![2],
        vec![7],
        vec![64],
        vec![1, 100, 3],
        vec![333],
    ] {
        assert_eq!(stream(&bytes, &sizes), want, "chunk sizes {sizes:?}");
    }
}

#[test]
fn streaming_reports_truncation_at_finish() {
    let (bytes, _) = small_gguf();
    for cut in [10, bytes.len() / 2, bytes.len() - 1] {
        let mut parser = GgufStreamParser::new();
        let mut sink = |_: GgufEvent<'_>| Ok::<(), ModelError>(());
        parser.push(&bytes[..cut], &mut sink).unwrap();
        let err = parser.finish(&mut sink).unwrap_err();
        assert!(
            matches!(err, ModelError::Truncated { .. }),
            "cut {cut}: {err}"
        );
    }
}

#[test]
fn version_2_files_read_the_same() {
    let (mut bytes, _) = small_gguf();
    bytes[4..8].copy_from_slice(&2u32.to_le_bytes());
    let file = GgufFile::parse(&bytes).unwrap();
    assert_eq!(file.header.version, 2);
    assert_eq!(file.header.tensors.len(), 3);
}

/// The SmolLM2 file: its header matches what models.md documents, and the streaming parser
/// delivers every tensor with the same bytes as the slice reader.
#[test]
fn smollm2_header_and_streaming() {
    let Some(path) = model_path() else { return };
    let bytes = std::fs::read(&path).unwrap();
    let file = GgufFile::parse(&bytes).unwrap();
    let h = &file.header;
    assert_eq!(h.version, 3);
    assert_eq!(h.metadata.get_u32("llama.block_count").unwrap(), 30);
    assert_eq!(h.metadata.get_u32("llama.embedding_length").unwrap(), 576);
    assert_eq!(
        h.metadata
            .get_str_array("tokenizer.ggml.tokens")
            .unwrap()
            .len(),
        49152
    );
    let count = |ty| h.tensors.iter().filter(|t| t.ty == ty).count();
    assert_eq!(
        (
            count(GgmlType::Q4_1),
            count(GgmlType::Q8_0),
            count(GgmlType::F32)
        ),
        (210, 1, 61)
    );
    assert_eq!(h.tensor("token_embd.weight").unwrap().ty, GgmlType::Q8_0);

    let mut delivered = 0usize;
    let mut last_offset = None;
    let streamed =
        GgufStreamParser::parse_reader::<ModelError>(std::io::Cursor::new(&bytes), &mut |ev| {
            if let GgufEvent::Tensor { info, bytes: b, .. } = ev {
                assert!(last_offset < Some(info.offset), "tensors out of file order");
                last_offset = Some(info.offset);
                assert_eq!(b, file.bytes_of(info).unwrap(), "{}", info.name);
                delivered += 1;
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(delivered, 272);
    assert_eq!(streamed.data_offset, h.data_offset);
}

fn model_path() -> Option<std::path::PathBuf> {
    match std::env::var_os("TPSMETER_MODEL") {
        Some(p) => Some(p.into()),
        None if std::env::var("TPSMETER_REQUIRE_ASSETS").as_deref() == Ok("1") => {
            panic!("TPSMETER_MODEL is not set and TPSMETER_REQUIRE_ASSETS=1")
        }
        None => {
            eprintln!("skipping: TPSMETER_MODEL is not set");
            None
        }
    }
}
