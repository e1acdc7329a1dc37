//! What a transport knows of a request beyond its outcome, and how it lands on the record.

use crate::report::RequestRecord;

/// Extra facts a transport knows about one request beyond its outcome.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordExtras {
    /// Time the request waited inside the client before going out (the browser's
    /// connections-per-host limit), from the transport's own timing.
    pub queue_ms: Option<f64>,
    /// The page was hidden at some time while the request ran (browser).
    pub tab_hidden: Option<bool>,
    /// The parts of the wait before the first byte that the transport could time (see the
    /// record's fields of the same names); `None` where it could not.
    pub dns_ms: Option<f64>,
    pub connect_ms: Option<f64>,
    pub tls_ms: Option<f64>,
    pub wait_ms: Option<f64>,
    /// The run's tokenizer's count of the answer text: the output token count when the
    /// server reported no usage.
    pub output_tokens_counted: Option<u64>,
    /// Multi-turn runs: the request's place in its conversation.
    pub turn: Option<crate::conversations::Turn>,
    /// The caller is counting the answer's tokens off its loop and hands the count in
    /// later ([`super::LoadDriver::counted`]): the request's slot is free at once, and its
    /// phase's summary waits for the count.
    pub count_pending: bool,
}

/// The transport's split of the wait before the first byte, onto `record`. Values that are
/// not finite or negative are dropped (they come from JavaScript too). A `queue_ms` from the
/// transport (the browser's, from Resource Timing) already leaves out the connection's
/// set-up; the timeline's (the CLI's: from the hand-over to the client until its HTTP stack
/// pulled the body) holds it, and loses the parts now recorded apart, so that in both
/// `queue_ms + dns_ms + connect_ms + tls_ms` is the wait before the request went out.
pub(super) fn set_timing_parts(record: &mut RequestRecord, extras: &RecordExtras) {
    let valid = |v: Option<f64>| v.filter(|v| v.is_finite() && *v >= 0.0);
    record.dns_ms = valid(extras.dns_ms);
    record.connect_ms = valid(extras.connect_ms);
    record.tls_ms = valid(extras.tls_ms);
    record.wait_ms = valid(extras.wait_ms);
    match valid(extras.queue_ms) {
        Some(q) => record.queue_ms = Some(q),
        None => {
            let setup: f64 = [record.dns_ms, record.connect_ms, record.tls_ms]
                .into_iter()
                .flatten()
                .sum();
            record.queue_ms = record.queue_ms.map(|q| (q - setup).max(0.0));
        }
    }
}
