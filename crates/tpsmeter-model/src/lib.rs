//! tpsmeter's model floor: what a local model is, whatever runs it.
//!
//! What it does: reads GGUF files ([`gguf`], from a slice or as a download arrives, every
//! count capped) and their quantized blocks ([`quant`]); builds and vets the tokenizer
//! ([`tokenizer`]), reads a model's hyper-parameters from its metadata ([`config`]), and renders the chat template ([`chat`](mod@chat)); turns token ids back
//! into text as they stream ([`detok`]); and runs the generation loop over any backend that
//! steps tokens ([`generate`]), reading its requests in OpenAI's shape once for the server and
//! the browser alike ([`request`]). Every failure is a typed [`ModelError`].
//!
//! What it does not do: run a forward pass (`tpsmeter-gpu` does, on the GPU or the CPU),
//! touch a GPU, the network or a clock.

pub mod chat;
pub mod config;
pub mod detok;
pub mod error;
pub mod generate;
pub mod gguf;
pub mod ops;
pub mod options;
pub mod quant;
pub mod request;
pub mod sample;
pub mod sampler;
pub mod step;
pub mod tensors;
pub mod tokenizer;

pub use error::{ModelError, Result};
