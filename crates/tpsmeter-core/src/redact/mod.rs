//! Keeping credentials out of everything a run writes: URLs without userinfo, secret query
//! values or fragments ([`redact_url`], [`RedactedUrl`]), the API key held apart
//! ([`Secret`], [`HeaderValue`]) and scrubbed from every text a server sends back, in every
//! encoding it could take ([`Redactor`]).
//!
//! A leaf: the request builders, the report and the failure classifier all use it, and it
//! uses none of them (the redactor for a request's own credentials is built where requests
//! are: `Redactor::for_spec` in the `request` module).

mod redactor;
mod secret;
pub(crate) mod secret_forms;
mod url;

pub use redactor::{MIN_SECRET_CHARS, REDACTED, Redactor};
pub use secret::{HeaderValue, Secret};
pub(crate) use url::url_secrets;
pub use url::{RedactedUrl, redact_url};
