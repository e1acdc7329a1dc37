//! Where a GGUF model ends, and what a hostile header cannot make the readers do: input after
//! the end of the last tensor (and its alignment padding) is not read, and a tensor larger than
//! the adapter allows, or than the file holds, is refused from the header alone.

#![allow(clippy::unwrap_used)]

mod gguf_fixture;

use gguf_fixture::{mark, small_gguf};
use tpsmeter_model::ModelError;
use tpsmeter_model::gguf::{GgufEvent, GgufFile, GgufHeader, GgufStreamParser};

/// What the parser reported for `input` pushed in `chunk`-byte pieces while it wanted more:
/// the concatenated `Bytes` events, the tensors' names, and the bytes it was handed.
fn stream(input: &[u8], chunk: usize) -> (Vec<u8>, Vec<String>, usize, GgufStreamParser) {
    let mut parser = GgufStreamParser::new();
    let mut bytes = Vec::new();
    let mut tensors = Vec::new();
    let mut handed = 0;
    for piece in input.chunks(chunk) {
        if !parser.wants_more() {
            break;
        }
        handed += piece.len();
        parser
            .push::<ModelError>(piece, &mut |ev| {
                match ev {
                    GgufEvent::Bytes(b) => bytes.extend_from_slice(b),
                    GgufEvent::Tensor { info, .. } => tensors.push(info.name.clone()),
                    GgufEvent::Header(_) => {}
                }
                Ok(())
            })
            .unwrap();
    }
    (bytes, tensors, handed, parser)
}

/// A valid model followed by 600 MB of zeros once loaded and was cached as 694 MB: the
/// parser now takes the model's bytes and stops, whatever follows them and however the input
/// is cut.
#[test]
fn bytes_after_the_model_are_not_read() {
    let (model, _) = small_gguf();
    let header = GgufFile::parse(&model).unwrap().header;
    // The fixture's writer does not pad after the last tensor; the model's extent does.
    let len = header.model_len() as usize;
    assert_eq!(len, model.len().next_multiple_of(header.alignment as usize));
    let mut input = model.clone();
    input.extend(std::iter::repeat_n(0xab, 1 << 20));
    for chunk in [1, 5, 64, 4096, input.len()] {
        let (bytes, tensors, handed, mut parser) = stream(&input, chunk);
        assert_eq!(
            bytes,
            input[..len],
            "chunks of {chunk}: the Bytes events are the model"
        );
        assert_eq!(tensors, ["a.weight", "b.weight", "c.bias"]);
        assert!(!parser.wants_more(), "chunks of {chunk}");
        // The header is parsed again only as the input doubles (linear work in all): a file
        // whose data is smaller than its header, as here, may be read to twice its length.
        // A real model's data dwarfs its header.
        assert!(
            handed < 2 * len + chunk,
            "chunks of {chunk}: read on to {handed}"
        );
        assert_eq!(parser.bytes_received(), len as u64);
        assert_eq!(parser.model_bytes(), len as u64);
        // More input changes nothing.
        let mut events = 0;
        parser
            .push::<ModelError>(&[0; 100], &mut |_| {
                events += 1;
                Ok(())
            })
            .unwrap();
        assert_eq!((events, parser.bytes_received()), (0, len as u64));
        parser.finish::<ModelError>(&mut |_| Ok(())).unwrap();
    }
}

/// A file that ends at its last tensor, without the padding, is whole.
#[test]
fn a_model_without_final_padding_is_whole() {
    let (model, _) = small_gguf();
    let (bytes, tensors, _, mut parser) = stream(&model, 7);
    assert_eq!(bytes, model);
    assert_eq!(tensors.len(), 3);
    assert!(parser.wants_more(), "the padding could still come");
    parser.flush::<ModelError>(&mut |_| Ok(())).unwrap();
    assert_eq!(parser.model_bytes(), model.len() as u64);
    parser.finish::<ModelError>(&mut |_| Ok(())).unwrap();
}

/// A file smaller than the parser's first header attempt: its header completes only at the
/// end (`flush`), and the model's bytes are reported then.
#[test]
fn a_header_completed_by_flush_reports_the_model_bytes() {
    let (model, _) = small_gguf();
    let mut input = model.clone();
    input.extend_from_slice(&[0xab; 100]);
    let mut parser = GgufStreamParser::new();
    let mut bytes = Vec::new();
    let mut sink = |ev: GgufEvent<'_>| {
        if let GgufEvent::Bytes(b) = ev {
            bytes.extend_from_slice(b);
        }
        Ok(())
    };
    // A failed attempt on 60 % of the file defers the next one until the buffer doubles,
    // which the rest of the file does not reach.
    let cut = input.len() * 6 / 10;
    parser.push::<ModelError>(&input[..cut], &mut sink).unwrap();
    parser.push(&input[cut..], &mut sink).unwrap();
    assert!(parser.header().is_none(), "the header was not deferred");
    assert_eq!(
        parser.model_bytes(),
        0,
        "nothing is known to be the model's yet"
    );
    parser.flush(&mut sink).unwrap();
    let len = GgufFile::parse(&model).unwrap().header.model_len() as usize;
    assert_eq!(parser.model_bytes(), len as u64);
    assert_eq!(bytes, input[..len]);
}

/// Dims of [2^40] pass the element cap: the header then declares a 2 TiB tensor. The
/// loader refused nothing until its bytes filled the renderer's memory (and the trap left a
/// borrowed wasm object whose `free()` hid the cause); the header now tells both what the
/// adapter cannot hold and what the file cannot contain.
#[test]
fn a_huge_tensor_is_refused_from_the_header() {
    let (mut model, layout) = small_gguf();
    // c.bias (F16, one dimension) is the last tensor, so no overlap check catches it.
    let dims_at = mark(&layout, "tensor info c.bias") + 8 + "c.bias".len() + 4;
    model[dims_at..dims_at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let header = GgufHeader::parse(&model).unwrap();

    let limit = 256 << 20;
    let e = header.check_tensor_bytes(limit).unwrap_err();
    assert_eq!(e.kind(), "LimitExceeded");
    match &e {
        ModelError::TensorTooLarge {
            tensor,
            dims,
            bytes,
            limit: l,
        } => {
            assert_eq!(tensor, "c.bias");
            assert_eq!(dims, &[1u64 << 40]);
            assert_eq!(*bytes, 2 << 40);
            assert_eq!(*l, limit);
        }
        other => panic!("{other}"),
    }
    let text = e.to_string();
    assert!(
        text.contains("c.bias")
            && text.contains("1099511627776")
            && text.contains(&limit.to_string()),
        "{text}"
    );

    // Against the file's own length the header is malformed.
    let e = header
        .check_data_len(model.len() as u64 - header.data_offset)
        .unwrap_err();
    assert_eq!(e.kind(), "InvalidModel");
    assert!(
        matches!(e, ModelError::TensorOutOfRange { ref tensor, .. } if tensor == "c.bias"),
        "{e}"
    );

    // A sink that checks the header (as the engine's loader does) stops the stream there,
    // before the parser holds any of the tensor.
    let mut parser = GgufStreamParser::new();
    let mut input = model.clone();
    input.extend(std::iter::repeat_n(0, 8 << 20));
    let mut failed = None;
    for piece in input.chunks(1 << 16) {
        let r = parser.push(piece, &mut |ev| match ev {
            GgufEvent::Header(h) => h.check_tensor_bytes(limit),
            _ => Ok(()),
        });
        if let Err(e) = r {
            failed = Some(e);
            break;
        }
    }
    assert!(
        matches!(failed, Some(ModelError::TensorTooLarge { .. })),
        "{failed:?}"
    );
    assert!(
        parser.bytes_received() <= 1 << 16,
        "{}",
        parser.bytes_received()
    );
}
