//! Synthetic models of the larger shapes load and run on the adapter here: Qwen2.5-0.5B at
//! Q8_0 and Llama-3.2-1B at Q4_1, whose embeddings (145 MB and 215 MB, also their output
//! heads) are larger than one storage binding (lavapipe's 128 MiB), split by rows across
//! bindings. The GPU profile is forced, so the weights are storage buffers as on real GPUs
//! and in browsers. The weights are random, so no correctness gate applies beyond what any
//! run must give: finite logits, every sampled id in the vocabulary, the tokens asked for.
//! (`model_reference`'s `split_weights_match_the_cpu_reference` checks split weights against
//! the CPU reference on the real SmolLM2.)
#![allow(clippy::unwrap_used)]

mod model_support;

use model_support::device_with;
use tpsmeter_gpu::engine::Engine;
use tpsmeter_gpu::gpu::{AdapterProfile, ContextOptions};
use tpsmeter_gpu::synthetic::SyntheticSpec;
use tpsmeter_model::generate::{CancelToken, GenerateParams};
use tpsmeter_model::gguf::GgufFile;
use tpsmeter_model::options::ModelOptions;
use tpsmeter_model::sample::SamplerConfig;

#[test]
fn embeddings_larger_than_a_binding_load_split_and_run() {
    const TEST: &str = "embeddings_larger_than_a_binding_load_split_and_run";
    let opts = ContextOptions {
        profile: Some(AdapterProfile::Gpu),
        ..ContextOptions::default()
    };
    let Some(ctx) = device_with(TEST, &opts) else {
        return;
    };
    for name in ["Qwen2.5-0.5B:Q8_0", "Llama-3.2-1B:Q4_1"] {
        let spec = SyntheticSpec::parse(name).unwrap();
        let bytes = spec.build(5).unwrap();
        let embd = GgufFile::parse(&bytes)
            .unwrap()
            .header
            .tensor("token_embd.weight")
            .unwrap()
            .n_bytes;
        assert!(
            embd > ctx.max_binding(),
            "{name}: the embedding ({embd} B) must exceed one binding ({} B)",
            ctx.max_binding()
        );
        let model = ModelOptions {
            max_context: 128,
            ..ModelOptions::default()
        };
        let mut engine = Engine::load(ctx.clone(), &bytes, &model).unwrap();
        drop(bytes);
        let prompt = engine.encode("split weights").unwrap();
        let params = GenerateParams {
            max_tokens: 6,
            ignore_eos: true,
            ..GenerateParams::default()
        };
        let g = engine
            .generate(
                &prompt,
                &params,
                &SamplerConfig::default(),
                &CancelToken::new(),
                &mut || 0.0,
                &mut |_| {},
            )
            .unwrap();
        assert_eq!(g.tokens.len(), 6, "{name}");
        let vocab = spec.shape.vocab as u32;
        assert!(
            g.tokens.iter().all(|&t| t < vocab),
            "{name}: {:?}",
            g.tokens
        );
        let logits = engine.model().read_logits().unwrap();
        assert_eq!(logits.len(), spec.shape.vocab);
        assert!(
            logits.iter().all(|v| v.is_finite()),
            "{name}: logits not finite"
        );
        // The tied head spans both parts: a head that read only the first part would leave
        // the last rows' logits at their initial zeros.
        let tail = &logits[logits.len() - 1000..];
        assert!(
            tail.iter().any(|&v| v != 0.0),
            "{name}: the last rows were not computed"
        );
    }
}
