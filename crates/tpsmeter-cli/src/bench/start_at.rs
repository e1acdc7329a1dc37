//! `--start-at`: the wall-clock time shards share as their start, and the wait for it.
//!
//! Parsed by hand (RFC 3339 or Unix seconds) rather than with a date crate: only one
//! format of timestamps and one of numbers are accepted, with no time zone database, and
//! the whole grammar fits in this file.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::bail;
use tokio_util::sync::CancellationToken;

/// How far in the past a start time may be before it is an error: shards launched by one
/// `kubectl apply` a moment before the time can start a few hundred ms late, but a time
/// minutes ago is a stale manifest, and starting at once would leave the shards apart.
pub const LATE_TOLERANCE: Duration = Duration::from_secs(2);

/// Latest accepted start time: a year 9999 bound keeps the millisecond arithmetic exact
/// and catches milliseconds passed as seconds.
const MAX_UNIX_S: f64 = 253_402_300_799.0;

/// A parsed `--start-at`: milliseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StartAt {
    pub unix_ms: f64,
}

/// clap's value parser for `--start-at`.
pub fn parse(text: &str) -> Result<StartAt, String> {
    let text = text.trim();
    let unix_s = if text.contains('T') || text.contains('t') {
        rfc3339(text)?
    } else {
        text.parse::<f64>().map_err(|_| {
            format!(
                "{text:?} is neither Unix seconds (e.g. 1767225600) nor an RFC 3339 time \
                 (e.g. 2026-01-01T00:00:00Z)"
            )
        })?
    };
    if !(unix_s.is_finite() && (0.0..=MAX_UNIX_S).contains(&unix_s)) {
        return Err(format!(
            "{text:?} is outside years 1970 to 9999 (Unix seconds, not milliseconds)"
        ));
    }
    Ok(StartAt {
        unix_ms: unix_s * 1000.0,
    })
}

/// Seconds since the epoch of `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`.
fn rfc3339(text: &str) -> Result<f64, String> {
    let bad =
        |why: &str| format!("{text:?} is not an RFC 3339 time like 2026-01-01T00:00:00Z ({why})");
    let b = text.as_bytes();
    let digits = |from: usize, len: usize| -> Result<i64, String> {
        let part = b.get(from..from + len).ok_or_else(|| bad("too short"))?;
        if !part.iter().all(u8::is_ascii_digit) {
            return Err(bad("a number has a non-digit"));
        }
        Ok(part.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0')))
    };
    let sep = |at: usize, allowed: &[u8]| {
        if b.get(at).is_some_and(|c| allowed.contains(c)) {
            Ok(())
        } else {
            Err(bad("a separator is missing"))
        }
    };
    let (year, month, day) = (digits(0, 4)?, digits(5, 2)?, digits(8, 2)?);
    sep(4, b"-")?;
    sep(7, b"-")?;
    sep(10, b"Tt")?;
    let (hour, minute, second) = (digits(11, 2)?, digits(14, 2)?, digits(17, 2)?);
    sep(13, b":")?;
    sep(16, b":")?;
    let mut at = 19;
    let mut fraction = 0.0;
    if b.get(at) == Some(&b'.') {
        let end = at
            + 1
            + b[at + 1..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
        if end == at + 1 {
            return Err(bad("no digits after the decimal point"));
        }
        fraction = text[at..end]
            .parse::<f64>()
            .map_err(|_| bad("bad fraction"))?;
        at = end;
    }
    let offset_s = match b.get(at) {
        Some(b'Z' | b'z') if at + 1 == b.len() => 0,
        Some(&sign @ (b'+' | b'-')) if at + 6 == b.len() => {
            sep(at + 3, b":")?;
            let (h, m) = (digits(at + 1, 2)?, digits(at + 4, 2)?);
            if h > 23 || m > 59 {
                return Err(bad("the offset is out of range"));
            }
            let s = h * 3600 + m * 60;
            if sign == b'+' { s } else { -s }
        }
        _ => return Err(bad("it must end in Z or an offset such as +02:00")),
    };
    let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = [
        31,
        if leap(year) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let Some(&days_in_month) = usize::try_from(month - 1)
        .ok()
        .and_then(|m| month_days.get(m))
    else {
        return Err(bad("the month is out of range"));
    };
    // Second 60 is a leap second; POSIX time has none, so it reads as the next second's 0.
    if day == 0 || day > days_in_month || hour > 23 || minute > 59 || second > 60 {
        return Err(bad("a field is out of range"));
    }
    let days = days_from_civil(year, month, day);
    let local = days * 86_400 + hour * 3600 + minute * 60 + second;
    Ok((local - offset_s) as f64 + fraction)
}

/// Days from 1970-01-01 to the proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The wall clock now, in ms since the epoch.
pub fn now_unix_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// Refuses a start time more than [`LATE_TOLERANCE`] in the past, unless `late_ok`.
pub fn check_not_late(start: StartAt, late_ok: bool) -> anyhow::Result<()> {
    let late_ms = now_unix_ms() - start.unix_ms;
    if !late_ok && late_ms > LATE_TOLERANCE.as_secs_f64() * 1000.0 {
        bail!(
            "--start-at is {:.1} s in the past: the shards would not start together \
             (pick a time ahead, or pass --allow-late-start to start at once)",
            late_ms / 1000.0
        );
    }
    Ok(())
}

/// Waits until the wall clock reads `start` (or Ctrl-C). Sleeps on the monotonic clock
/// and then checks the wall clock again, so a clock slewed by NTP meanwhile cannot make
/// the shard start before the shared time.
pub async fn wait_until(start: StartAt, cancel: &CancellationToken) {
    loop {
        let left_ms = start.unix_ms - now_unix_ms();
        if left_ms <= 0.0 {
            return;
        }
        // At least 1 ms per round: a sub-ms remainder must not spin.
        let nap = Duration::from_secs_f64(left_ms.max(1.0) / 1000.0);
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(nap) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn reads_unix_seconds_and_rfc3339() {
        assert_eq!(parse("1767225600").unwrap().unix_ms, 1_767_225_600_000.0);
        assert_eq!(parse("1767225600.25").unwrap().unix_ms, 1_767_225_600_250.0);
        for (text, unix_s) in [
            ("2026-01-01T00:00:00Z", 1_767_225_600.0),
            ("2026-01-01t00:00:00z", 1_767_225_600.0),
            ("2026-01-01T02:00:00+02:00", 1_767_225_600.0),
            ("2025-12-31T19:30:00-04:30", 1_767_225_600.0),
            ("1970-01-01T00:00:00.5Z", 0.5),
            ("2024-02-29T12:00:00Z", 1_709_208_000.0),
            ("2000-03-01T00:00:00Z", 951_868_800.0),
        ] {
            assert_eq!(parse(text).unwrap().unix_ms, unix_s * 1000.0, "{text}");
        }
    }

    #[test]
    fn refuses_what_it_cannot_read_by_name() {
        for (text, says) in [
            ("soon", "neither Unix seconds"),
            ("2026-01-01T00:00:00", "end in Z"),
            ("2026-01-01 00:00:00Z", "neither Unix seconds"),
            ("2026-13-01T00:00:00Z", "month"),
            ("2025-02-29T00:00:00Z", "out of range"),
            ("2026-01-01T24:00:00Z", "out of range"),
            ("2026-01-01T00:00:00.Z", "decimal point"),
            ("2026-1-01T00:00:00Z", "non-digit"),
            ("1767225600000", "milliseconds"),
            ("-5", "outside"),
            ("NaN", "outside"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn a_past_start_is_an_error_unless_allowed() {
        let past = StartAt {
            unix_ms: now_unix_ms() - 60_000.0,
        };
        let e = check_not_late(past, false).unwrap_err().to_string();
        assert!(
            e.contains("in the past") && e.contains("--allow-late-start"),
            "{e}"
        );
        check_not_late(past, true).unwrap();
        let just_now = StartAt {
            unix_ms: now_unix_ms() - 100.0,
        };
        check_not_late(just_now, false).unwrap();
    }
}
