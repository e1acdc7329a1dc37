//! The streaming loader on the real model: it stops at the end of the last tensor whatever
//! follows, hashes exactly the model's bytes, refuses bytes other than a pinned digest's, and
//! refuses a hostile header before reading the data it declares; for the CPU backend as for
//! the GPU.

#![allow(clippy::unwrap_used)]

mod model_support;

use model_support::{device, model_bytes};
use sha2::{Digest, Sha256};
use tpsmeter_gpu::GpuError;
use tpsmeter_gpu::cpu::{CpuModel, CpuOptions, CpuTarget};
use tpsmeter_gpu::engine::{Engine, EngineLoader, FileChecks, LoadTarget};
use tpsmeter_model::ModelError;
use tpsmeter_model::options::ModelOptions;

const CHUNK: usize = 1 << 20;

/// Pushes `input` in 1 MiB chunks while the loader wants more; the bytes handed over, and
/// the first error.
fn feed<T: LoadTarget>(
    loader: &mut EngineLoader<T>,
    input: &[u8],
) -> (usize, Result<(), GpuError>) {
    let mut handed = 0;
    for piece in input.chunks(CHUNK) {
        if !loader.wants_more() {
            break;
        }
        handed += piece.len();
        if let Err(e) = loader.push(piece) {
            return (handed, Err(e));
        }
    }
    (handed, Ok(()))
}

/// Feeds `model` followed by `padding` zero bytes: the loader takes the whole model and
/// stops asking within a chunk of its end.
fn feed_past_the_end<T: LoadTarget>(loader: &mut EngineLoader<T>, model: &[u8], padding: usize) {
    let mut input = model.to_vec();
    input.resize(model.len() + padding, 0);
    let (handed, pushed) = feed(loader, &input);
    pushed.unwrap();
    assert!(!loader.wants_more());
    assert!(handed < model.len() + CHUNK, "read on to {handed}");
}

fn options() -> ModelOptions {
    ModelOptions {
        max_context: 256,
        ..ModelOptions::default()
    }
}

/// A valid model followed by 600 MB of zeros loaded, and was hashed and cached as 694 MB.
#[test]
fn bytes_after_the_last_tensor_are_not_read_or_hashed() {
    let test = "bytes_after_the_last_tensor_are_not_read_or_hashed";
    let Some(model) = model_bytes(test) else {
        return;
    };
    let Some(ctx) = device(test) else { return };
    let padding = 16 << 20;
    let mut loader = EngineLoader::new(ctx, options());
    loader
        .set_checks(FileChecks {
            len: Some((model.len() + padding) as u64),
            sha256: true,
            ..FileChecks::default()
        })
        .unwrap();
    feed_past_the_end(&mut loader, &model, padding);
    assert_eq!(loader.model_bytes(), model.len() as u64);
    assert_eq!(loader.model_len(), Some(model.len() as u64));
    let engine = loader.finish().unwrap();
    let want = format!("{:x}", Sha256::digest(&model));
    assert_eq!(engine.sha256(), Some(want.as_str()));
}

/// A pinned digest refuses other bytes before the engine is built, and accepts its own.
#[test]
fn a_pinned_sha256_refuses_other_bytes() {
    let test = "a_pinned_sha256_refuses_other_bytes";
    let Some(model) = model_bytes(test) else {
        return;
    };
    let Some(ctx) = device(test) else { return };
    let pin: [u8; 32] = Sha256::digest(&model).into();
    let mut other = model.clone();
    // A byte of the last tensor's data: the file still parses and loads.
    let last = other.len() - 1;
    other[last] ^= 1;
    let checks = FileChecks {
        expect_sha256: Some(pin),
        ..FileChecks::default()
    };
    let mut loader = EngineLoader::new(ctx.clone(), options());
    loader.set_checks(checks.clone()).unwrap();
    feed(&mut loader, &other).1.unwrap();
    let e = loader.finish().unwrap_err();
    assert_eq!(e.kind(), "ChecksumMismatch", "{e}");
    assert!(
        e.to_string()
            .contains(&format!("{:x}", Sha256::digest(&other))),
        "{e}"
    );

    let mut loader = EngineLoader::new(ctx, options());
    loader.set_checks(checks).unwrap();
    feed(&mut loader, &model).1.unwrap();
    let engine: Engine = loader.finish().unwrap();
    assert_eq!(
        engine.sha256(),
        Some(format!("{:x}", Sha256::digest(&model)).as_str())
    );
}

/// `output_norm.weight` declared [2^40] (4 TiB of f32 in a 98 MB file) passes the element
/// cap; the loader then held every byte that came until the renderer ran out of memory. The
/// header now refuses it: against the file's length when known (malformed), else against the
/// adapter's largest buffer, naming the tensor, its dims and the limit.
#[test]
fn a_hostile_tensor_size_is_refused_from_the_header() {
    let test = "a_hostile_tensor_size_is_refused_from_the_header";
    let Some(mut model) = model_bytes(test) else {
        return;
    };
    let Some(ctx) = device(test) else { return };
    let info = [
        &18u64.to_le_bytes()[..],
        b"output_norm.weight",
        &1u32.to_le_bytes(),
    ]
    .concat();
    let at = model.windows(info.len()).position(|w| w == info).unwrap() + info.len();
    assert_eq!(model[at..at + 8], 576u64.to_le_bytes());
    model[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let header_end = at + 8 + 4 + 8;

    let mut loader = EngineLoader::new(ctx.clone(), options());
    loader
        .set_checks(FileChecks {
            len: Some(model.len() as u64),
            ..FileChecks::default()
        })
        .unwrap();
    let (handed, pushed) = feed(&mut loader, &model);
    let e = pushed.unwrap_err();
    assert_eq!(e.kind(), "InvalidModel", "{e}");
    assert!(
        matches!(e, GpuError::Model(ModelError::TensorOutOfRange { ref tensor, size, .. }) if tensor == "output_norm.weight" && size == 4 << 40),
        "{e}"
    );
    assert!(handed < header_end + 2 * CHUNK, "read on to {handed}");

    let limit = ctx.limits.max_buffer_size;
    let mut loader = EngineLoader::new(ctx, options());
    let (handed, pushed) = feed(&mut loader, &model);
    let e = pushed.unwrap_err();
    assert_eq!(e.kind(), "LimitExceeded", "{e}");
    match &e {
        GpuError::Model(ModelError::TensorTooLarge {
            tensor,
            dims,
            bytes,
            limit: l,
        }) => {
            assert_eq!(tensor, "output_norm.weight");
            assert_eq!(dims, &[1u64 << 40]);
            assert_eq!(*bytes, 4 << 40);
            assert_eq!(*l, limit);
        }
        other => panic!("{other}"),
    }
    assert!(handed < header_end + 2 * CHUNK, "read on to {handed}");
}

/// Greedy ids of `prompt` on a CPU engine.
fn cpu_greedy(engine: &mut Engine<CpuModel>, prompt: &str) -> Vec<u32> {
    use tpsmeter_model::generate::{CancelToken, GenerateParams};
    use tpsmeter_model::sample::SamplerConfig;
    let ids = engine.encode(prompt).unwrap();
    let params = GenerateParams {
        max_tokens: 8,
        stop_strings: Vec::new(),
        stop_tokens: Vec::new(),
        ignore_eos: true,
    };
    let greedy = SamplerConfig {
        temperature: 0.0,
        ..SamplerConfig::default()
    };
    let mut t = 0.0;
    engine
        .generate(
            &ids,
            &params,
            &greedy,
            &CancelToken::new(),
            &mut || {
                t += 1.0;
                t
            },
            &mut |_| {},
        )
        .unwrap()
        .tokens
}

/// The CPU backend loads a download as it arrives (as the browser's does): chunk by chunk
/// it builds the same engine as the whole file does, stops at the model's end, and a file
/// cut short is an `InvalidModel`-kind error, not a panic or a model with missing weights.
#[test]
fn the_cpu_backend_loads_a_download_in_chunks() {
    let test = "the_cpu_backend_loads_a_download_in_chunks";
    let Some(model) = model_bytes(test) else {
        return;
    };
    let cpu = CpuOptions {
        threads: Some(2),
        ..CpuOptions::default()
    };
    let mut loader = EngineLoader::<CpuTarget>::cpu(cpu, options());
    loader
        .set_checks(FileChecks {
            sha256: true,
            ..FileChecks::default()
        })
        .unwrap();
    feed_past_the_end(&mut loader, &model, 4 << 20);
    let mut streamed = loader.finish().unwrap();
    let want = format!("{:x}", Sha256::digest(&model));
    assert_eq!(streamed.sha256(), Some(want.as_str()));
    let mut whole = Engine::load_cpu(&model, &options(), cpu).unwrap();
    // Held once: the weights as stored, not the file beside a copy.
    let resident = streamed.model().resident_bytes();
    assert!(
        resident < model.len() + (2 << 20),
        "{resident} bytes resident for a {}-byte file",
        model.len()
    );
    for prompt in ["The capital of France is", "def add(a, b):"] {
        assert_eq!(
            cpu_greedy(&mut streamed, prompt),
            cpu_greedy(&mut whole, prompt)
        );
    }

    let cut = &model[..model.len() * 3 / 5];
    let mut loader = EngineLoader::<CpuTarget>::cpu(cpu, options());
    let (_, pushed) = feed(&mut loader, cut);
    pushed.unwrap();
    let err = loader.finish().unwrap_err();
    assert_eq!(err.kind(), "InvalidModel", "{err}");
}
