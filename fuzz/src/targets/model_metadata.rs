//! The model configuration and the tokenizer built from a GGUF header's metadata, as the
//! engine's loader builds them; then a little text encoded and decoded with that tokenizer,
//! whole and streamed, and the chat template it ships rendered once.

use tpsmeter_model::chat::{ChatMessage, ChatTemplate, RenderOptions};
use tpsmeter_model::config::ModelConfig;
use tpsmeter_model::detok::Detokenizer;
use tpsmeter_model::gguf::GgufHeader;
use tpsmeter_model::tokenizer::{Tokenizer, TokenizerSpec};

const TEXT: &str = "Hello, wörld! 12345 <|im_start|>user\n\t  日本語 🦀\r\n";

/// One input: see the module's docs.
pub fn run(data: &[u8]) {
    let Ok(header) = GgufHeader::parse(data) else {
        return;
    };
    if let Ok(cfg) = ModelConfig::from_header(&header) {
        // The derived sizes the engine allocates by: must not overflow for any accepted config.
        let _ = (cfg.q_dim(), cfg.k_dim(), cfg.v_dim());
        for layer in 0..cfg.n_layers.min(4) {
            let _ = (cfg.is_local_layer(layer), cfg.rope_base_for_layer(layer));
        }
    }
    let Ok(spec) = TokenizerSpec::from_gguf(&header.metadata) else {
        return;
    };
    let Ok(tokenizer) = Tokenizer::from_spec(&spec) else {
        return;
    };
    if let Ok(ids) = tokenizer.encode(TEXT, true) {
        let whole = tokenizer
            .decode(&ids, true)
            .expect("ids from encode decode");
        // The streaming detokenizer renders exactly what the whole decode does.
        let mut detok = Detokenizer::for_sequence(&tokenizer, true);
        let mut streamed = String::new();
        for &id in &ids {
            streamed.push_str(&detok.push(id).expect("ids from encode decode"));
        }
        streamed.push_str(&detok.finish());
        assert_eq!(streamed, whole);
    }
    // Ids outside the vocabulary are errors, not panics.
    let _ = tokenizer.decode(&[0, 1, u32::MAX], false);
    if let Ok(template) = ChatTemplate::from_tokenizer(&tokenizer) {
        let messages = [ChatMessage::new("user", TEXT)];
        let options = RenderOptions {
            add_generation_prompt: true,
            now_unix_seconds: Some(0),
            ..RenderOptions::default()
        };
        let _ = template.render(&messages, &options);
    }
}
