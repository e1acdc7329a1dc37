//! How what a transport knows of a request beyond its outcome ([`RecordExtras`], on the
//! floor) lands on the record.

use crate::report::RequestRecord;
use crate::spec::RecordExtras;

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
