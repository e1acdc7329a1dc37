//! The HTTP side of `tpsmeter bench`: the client (reqwest, or on Linux the hyper client
//! that stamps when each request's last byte was written), one request's send and stamped
//! read, and the failure kinds a request can end in. Nothing else in the CLI sends requests,
//! so it lives under `bench`.

pub mod client;
pub mod failure;
pub mod response;
pub mod runner;
pub mod sent_at;
#[cfg(target_os = "linux")]
pub mod setup_timing;
#[cfg(target_os = "linux")]
pub mod stamped_http;
