//! Per-request rows as CSV (RFC 4180 quoting), one row per record.
//!
//! Times are milliseconds, rates tokens per second; an empty cell means "undefined" (the
//! JSON `null`). Columns are documented in `docs/report-schema.md`. The CLI's `--csv` and the
//! page's "Export CSV" (through wasm) both write it; the last five columns came with the
//! page (paints, queueing, the HTTP version, a hidden tab), empty where a run has none; the
//! four after them split the wait before the first byte (name lookup, TCP, TLS, server).
//!
//! Written by hand, not with the `csv` crate (which the tests still read it back with):
//! quoting is one rule, and the crate's writer made the benchmark's wasm 5.3 KB gz larger
//! once the page exported through it.

use super::RequestRecord;

/// The header row, in column order.
pub const COLUMNS: [&str; 37] = [
    "id",
    "level_kind",
    "level",
    "warmup",
    "start_ms",
    "first_byte_ms",
    "first_token_ms",
    "end_ms",
    "ttfb_ms",
    "ttft_ms",
    "ttft_reasoning_ms",
    "e2e_ms",
    "output_tokens",
    "token_source",
    "chunk_tokens",
    "input_tokens",
    "reasoning_tokens",
    "output_chunks",
    "itl_token_ms",
    "tpot_ms",
    "output_tps",
    "decode_tps",
    "server_decode_tps",
    "finish_reason",
    "http_status",
    "error_class",
    "error_message",
    "retry_after_s",
    "ttfp_ms",
    "painted_tps",
    "queue_ms",
    "http_version",
    "tab_hidden",
    "dns_ms",
    "connect_ms",
    "tls_ms",
    "wait_ms",
];

/// Every record as a CSV document with a header row and `\n` line ends.
pub fn to_csv(records: &[RequestRecord]) -> String {
    write_table(COLUMNS, records.iter().map(row))
}

/// A header and rows of cells as CSV, quoted and ended as [`to_csv`] writes them (the page
/// writes a CSV it imported back out this way). Rows may differ in length.
pub fn write_table<I>(
    header: impl IntoIterator<Item: AsRef<str>>,
    rows: impl Iterator<Item = I>,
) -> String
where
    I: IntoIterator<Item: AsRef<str>>,
{
    let mut out = String::new();
    write_line(&mut out, header);
    for r in rows {
        write_line(&mut out, r);
    }
    out
}

/// One record: fields holding a comma, a quote or a line break are quoted, quotes doubled
/// (RFC 4180); a record of one empty field is `""`, so it is not read as a blank line.
fn write_line(out: &mut String, cells: impl IntoIterator<Item: AsRef<str>>) {
    let start = out.len();
    for (i, cell) in cells.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let cell = cell.as_ref();
        if cell.contains([',', '"', '\n', '\r']) {
            out.push('"');
            out.push_str(&cell.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(cell);
        }
    }
    if out.len() == start {
        out.push_str("\"\"");
    }
    out.push('\n');
}

fn row(r: &RequestRecord) -> [String; COLUMNS.len()] {
    let m = &r.metrics;
    let err = r.error.as_ref();
    [
        r.id.to_string(),
        r.level.kind().to_string(),
        r.level.value().to_string(),
        r.warmup.to_string(),
        r.start_ms.to_string(),
        opt(r.first_byte_ms),
        opt(r.first_token_ms),
        r.end_ms.to_string(),
        opt(m.ttfb_ms),
        opt(m.ttft_ms),
        opt(m.ttft_reasoning_ms),
        opt(m.e2e_ms),
        r.output_tokens.to_string(),
        json_name(&r.token_source),
        m.chunk_tokens.to_string(),
        opt(r.input_tokens),
        opt(r.reasoning_tokens),
        m.output_chunks.to_string(),
        opt(m.itl_token_ms),
        opt(m.tpot_ms),
        opt(m.output_tps),
        opt(m.decode_tps),
        opt(m.server_decode_tps),
        r.finish_reason.as_ref().map(json_name).unwrap_or_default(),
        opt(r.http_status.or(err.and_then(|e| e.http_status))),
        err.map(|e| e.class.as_str().to_string())
            .unwrap_or_default(),
        err.map(|e| e.message.clone()).unwrap_or_default(),
        opt(err.and_then(|e| e.retry_after_s)),
        opt(m.ttfp_ms),
        opt(m.paint.as_ref().and_then(|p| p.painted_tps)),
        opt(r.queue_ms),
        r.http_version.clone().unwrap_or_default(),
        opt(r.tab_hidden),
        opt(r.dns_ms),
        opt(r.connect_ms),
        opt(r.tls_ms),
        opt(r.wait_ms),
    ]
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// The serde name of a unit-like enum value (`usage`, `stop`), or the inner string of a
/// newtype variant (`FinishReason::Other("x")` → `x`), so CSV and JSON agree.
fn json_name<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(serde_json::Value::Object(map)) => map
            .values()
            .next()
            .and_then(|v| v.as_str())
            .map(str::to_string)
            .unwrap_or_default(),
        _ => String::new(),
    }
}
