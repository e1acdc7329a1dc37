//! A small valid GGUF file built with the crate's writer, shared by the GGUF tests: every
//! metadata value type (a nested array included), and tensors of several types so the data
//! section has alignment padding between them.

#![allow(dead_code, clippy::unwrap_used)]

use tpsmeter_model::gguf::writer::Layout;
use tpsmeter_model::gguf::{GgmlType, GgufWriter, MetadataArray, MetadataValue};

/// The fixture's bytes and section layout.
pub fn small_gguf() -> (Vec<u8>, Layout) {
    let mut w = GgufWriter::new();
    w.alignment(64)
        .metadata(
            "general.architecture",
            MetadataValue::String("llama".into()),
        )
        .metadata("u8", MetadataValue::U8(200))
        .metadata("i8", MetadataValue::I8(-5))
        .metadata("u16", MetadataValue::U16(60_000))
        .metadata("i16", MetadataValue::I16(-30_000))
        .metadata("llama.block_count", MetadataValue::U32(2))
        .metadata("i32", MetadataValue::I32(-7))
        .metadata("f32", MetadataValue::F32(1.5))
        .metadata("bool", MetadataValue::Bool(true))
        .metadata("u64", MetadataValue::U64(1 << 40))
        .metadata("i64", MetadataValue::I64(-(1 << 40)))
        .metadata("f64", MetadataValue::F64(0.25))
        .metadata(
            "tokenizer.ggml.tokens",
            MetadataValue::Array(MetadataArray::String(vec![
                "<s>".into(),
                "héllo".into(),
                String::new(),
            ])),
        )
        .metadata(
            "tokenizer.ggml.scores",
            MetadataValue::Array(MetadataArray::F32(vec![0.0, -1.0, -2.5])),
        )
        .metadata(
            "nested",
            MetadataValue::Array(MetadataArray::Array(vec![
                MetadataArray::I32(vec![1, 2, 3]),
                MetadataArray::String(vec!["a".into()]),
                MetadataArray::Array(vec![MetadataArray::Bool(vec![true, false])]),
            ])),
        );
    let f32s: Vec<f32> = (0..24).map(|i| i as f32 - 3.5).collect();
    w.tensor_f32("a.weight", &[8, 3], &f32s).unwrap();
    let q8: Vec<u8> = (0..2 * 34).map(|i| (i * 37 % 251) as u8).collect();
    w.tensor("b.weight", &[32, 2], GgmlType::Q8_0, q8).unwrap();
    let halves: Vec<u8> = (0..10u16)
        .flat_map(|i| half::f16::from_f32(f32::from(i) / 4.0).to_le_bytes())
        .collect();
    w.tensor("c.bias", &[10], GgmlType::F16, halves).unwrap();
    w.to_bytes_with_layout()
}

/// Start of the mark whose description is `what`.
pub fn mark(layout: &Layout, what: &str) -> usize {
    layout
        .marks
        .iter()
        .find(|(w, _)| w == what)
        .map(|&(_, o)| o)
        .unwrap_or_else(|| panic!("no mark {what:?}"))
}
