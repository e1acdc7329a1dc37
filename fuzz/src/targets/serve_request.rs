//! `tpsmeter serve`'s request-body parsing (`/v1/chat/completions` and `/v1/completions`) on
//! any body up to the server's size cap: a 400 message or a request, never a panic.
//!
//! Input: byte 0's low bit picks the endpoint; the rest is the body.

use tpsmeter_cli::serve::openai::{Api, parse};

/// One input: see the module's docs.
pub fn run(data: &[u8]) {
    let Some((&which, body)) = data.split_first() else {
        return;
    };
    let api = if which & 1 == 0 {
        Api::Chat
    } else {
        Api::Completions
    };
    let _ = parse(api, body);
}
