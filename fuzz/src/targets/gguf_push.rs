//! `GgufStreamParser` fed the bytes in fuzzer-chosen chunks must agree with `GgufFile::parse`
//! of the same bytes: both accept or both refuse, and when both accept, the same header,
//! every tensor's bytes, each exactly once, in file order, and as `Bytes` the file up to the
//! model's end and nothing after it.

use tpsmeter_model::ModelError;
use tpsmeter_model::gguf::{GgufEvent, GgufFile, GgufHeader, GgufStreamParser, TensorInfo};

/// What a header says, comparable: `GgufHeader` has no `PartialEq`, and its `Debug` shows a
/// hash map's (random) order. Values are compared by their `Debug` text so a NaN equals
/// itself.
type Summary = (u32, u64, u64, Vec<TensorInfo>, Vec<(String, String)>);

fn summary(h: &GgufHeader) -> Summary {
    let metadata = h
        .metadata
        .iter()
        .map(|(k, v)| (k.to_owned(), format!("{v:?}")))
        .collect();
    (
        h.version,
        h.alignment,
        h.data_offset,
        h.tensors.clone(),
        metadata,
    )
}

/// One input: see the module's docs.
pub fn run(data: &[u8]) {
    let (chunks, body) = super::chunks(data);
    let mut header_seen: Option<Summary> = None;
    let mut tensors: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut model: Vec<u8> = Vec::new();
    let mut sink = |ev: GgufEvent<'_>| {
        match ev {
            GgufEvent::Bytes(bytes) => model.extend_from_slice(bytes),
            GgufEvent::Header(h) => {
                assert!(header_seen.is_none(), "header reported twice");
                header_seen = Some(summary(h));
            }
            GgufEvent::Tensor { index, info, bytes } => {
                assert!(header_seen.is_some(), "tensor before the header");
                assert_eq!(bytes.len() as u64, info.n_bytes, "tensor {index}");
                tensors.push((index, bytes.to_vec()));
            }
        }
        Ok(())
    };
    let mut parser = GgufStreamParser::new();
    let mut pushed: Result<(), ModelError> = Ok(());
    for chunk in &chunks {
        pushed = parser.push(chunk, &mut sink);
        if pushed.is_err() {
            break;
        }
    }
    let streamed = pushed.and_then(|()| parser.finish(&mut sink));
    let sliced = GgufFile::parse(body);
    match (&streamed, &sliced) {
        (Ok(header), Ok(file)) => {
            // `assert!`, not `assert_eq!`: a header's text runs to megabytes in the log.
            let want = summary(&file.header);
            assert!(summary(header) == want, "finish's header differs");
            assert!(
                header_seen.as_ref() == Some(&want),
                "reported header differs"
            );
            let mut order: Vec<usize> = (0..file.header.tensors.len()).collect();
            order.sort_by_key(|&i| file.header.tensors[i].offset);
            let got: Vec<usize> = tensors.iter().map(|(i, _)| *i).collect();
            assert_eq!(got, order, "tensors reported in file order, each once");
            for (i, bytes) in &tensors {
                let info = &file.header.tensors[*i];
                let want = file.bytes_of(info).expect("checked by parse");
                assert!(bytes == want, "bytes of tensor {:?}", info.name);
            }
            let end =
                usize::try_from(file.header.model_len()).map_or(body.len(), |n| n.min(body.len()));
            assert!(
                model == body[..end],
                "the Bytes events are the model, up to its end"
            );
        }
        (Err(_), Err(_)) => {}
        (Ok(_), Err(e)) => panic!("the push reader accepted what the slice reader refused: {e}"),
        (Err(e), Ok(_)) => panic!("the push reader refused what the slice reader accepted: {e}"),
    }
}
