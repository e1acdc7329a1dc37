//! `strftime_now(format)` for templates (Llama 3.x puts today's date in its system prompt).
//!
//! The crate owns no clock: the caller passes the time (seconds since the Unix epoch, UTC)
//! with the render options, and this formats it with the common `strftime` codes.

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// A UTC calendar time broken into fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Civil {
    year: i64,
    /// 1..=12
    month: u32,
    /// 1..=31
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    /// 0 = Monday
    weekday: u32,
    /// 1..=366
    day_of_year: u32,
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// Howard Hinnant's days-to-civil algorithm.
fn civil(unix_seconds: i64) -> Civil {
    let days = unix_seconds.div_euclid(86_400);
    let secs = unix_seconds.rem_euclid(86_400) as u32;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    const CUMULATIVE: [u32; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    let leap_day = u32::from(month > 2 && is_leap(year));
    Civil {
        year,
        month,
        day,
        hour: secs / 3600,
        minute: secs / 60 % 60,
        second: secs % 60,
        // 1970-01-01 was a Thursday (3 with Monday = 0).
        weekday: (days + 3).rem_euclid(7) as u32,
        day_of_year: CUMULATIVE[(month - 1) as usize] + day + leap_day,
    }
}

/// Formats `unix_seconds` (UTC) with `strftime` codes; unknown codes are kept verbatim.
pub(super) fn strftime(format: &str, unix_seconds: i64) -> String {
    let t = civil(unix_seconds);
    let month = MONTHS[(t.month - 1) as usize];
    let weekday = WEEKDAYS[t.weekday as usize];
    let mut out = String::with_capacity(format.len() + 16);
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('Y') => out.push_str(&t.year.to_string()),
            Some('y') => out.push_str(&format!("{:02}", t.year.rem_euclid(100))),
            Some('m') => out.push_str(&format!("{:02}", t.month)),
            Some('d') => out.push_str(&format!("{:02}", t.day)),
            Some('e') => out.push_str(&format!("{:2}", t.day)),
            Some('-') => match chars.next() {
                // glibc's "no padding" flag, used as %-d in some templates.
                Some('d') => out.push_str(&t.day.to_string()),
                Some('m') => out.push_str(&t.month.to_string()),
                Some(other) => {
                    out.push_str("%-");
                    out.push(other);
                }
                None => out.push_str("%-"),
            },
            Some('H') => out.push_str(&format!("{:02}", t.hour)),
            Some('I') => out.push_str(&format!("{:02}", (t.hour + 11) % 12 + 1)),
            Some('p') => out.push_str(if t.hour < 12 { "AM" } else { "PM" }),
            Some('M') => out.push_str(&format!("{:02}", t.minute)),
            Some('S') => out.push_str(&format!("{:02}", t.second)),
            Some('j') => out.push_str(&format!("{:03}", t.day_of_year)),
            Some('B') => out.push_str(month),
            Some('b') | Some('h') => out.push_str(&month[..3]),
            Some('A') => out.push_str(weekday),
            Some('a') => out.push_str(&weekday[..3]),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        // 2024-07-23 15:04:05 UTC, a Tuesday, the 205th day of a leap year.
        let t = 1_721_747_045;
        assert_eq!(strftime("%d %b %Y", t), "23 Jul 2024");
        assert_eq!(
            strftime("%A %B %-d, %y %H:%M:%S %j %p %%", t),
            "Tuesday July 23, 24 15:04:05 205 PM %"
        );
        assert_eq!(strftime("%Y-%m-%d %a", 0), "1970-01-01 Thu");
        // Before the epoch, and the last day of a leap year.
        assert_eq!(strftime("%Y-%m-%d %j", -86_400), "1969-12-31 365");
        assert_eq!(strftime("%Y-%m-%d %j", 1_735_603_200), "2024-12-31 366");
    }
}
