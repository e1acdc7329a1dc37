//! The line under the table that says where each level's requests waited before their
//! first byte: connection set-up (name lookup, TCP, TLS), the client's own queue, or the
//! server. A server whose listen backlog overflows makes new connections wait 1 s, 3 s ...
//! for the SYN's retry; that shows here as connect time, apart from the server's wait.

use std::fmt::Write as _;

use tpsmeter_core::report::Report;
use tpsmeter_core::stats::Summary;

/// One line per level that timed any part (nothing when no level did).
pub fn lines(report: &Report, out: &mut String) {
    let mut any = false;
    for level in &report.levels {
        let s = &level.summary;
        let parts: Vec<String> = [
            ("DNS", s.dns_ms.as_ref()),
            ("connect", s.connect_ms.as_ref()),
            ("TLS", s.tls_ms.as_ref()),
            ("client queue", s.queue_ms.as_ref()),
            ("server wait", s.wait_ms.as_ref()),
        ]
        .into_iter()
        .filter_map(|(name, summary)| summary.map(|v| format!("{name} {}", pair(v))))
        .collect();
        // The queue alone is no split: it was always reported.
        if s.connect_ms.is_none() && s.wait_ms.is_none() {
            continue;
        }
        if !any {
            let _ = writeln!(out, "Before the first byte, ms p50 / p99:");
            any = true;
        }
        let _ = writeln!(out, "  {}: {}", level.level, parts.join(", "));
    }
}

fn pair(s: &Summary) -> String {
    format!(
        "{} / {}",
        crate::output::table::num(s.p50),
        crate::output::table::num(s.p99)
    )
}
