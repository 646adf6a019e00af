//! The one place that turns instants into UTC calendar text and back, on `jiff`'s proleptic
//! Gregorian calendar (years 0000-9999 here; no time zones: everything is UTC).
//!
//! Callers: [`crate::ifp::Timestamp`] (the strict ifp/1 grammar checks the shape, this module the
//! calendar), the link's and the test phone's message stamps ([`rfc3339_ms`]) and the CLI's
//! listings ([`utc_text_ms`]).

use jiff::civil::{Date, DateTime, Time};
use jiff::SignedDuration;

/// 1970-01-01T00:00:00, the Unix epoch as a UTC civil date-time.
const EPOCH: DateTime = DateTime::constant(1970, 1, 1, 0, 0, 0, 0);

/// The UTC calendar date and time of an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcParts {
    /// Year, 0-9999.
    pub year: u32,
    /// Month, 1-12.
    pub month: u32,
    /// Day of the month, 1-31.
    pub day: u32,
    /// Hour, 0-23.
    pub hour: u32,
    /// Minute, 0-59.
    pub minute: u32,
    /// Second, 0-59.
    pub second: u32,
    /// Milliseconds within the second, 0-999.
    pub millis: u32,
}

impl UtcParts {
    /// RFC 3339 UTC with milliseconds and a literal `Z`: `2026-07-21T00:00:00.000Z`.
    pub fn rfc3339(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second, self.millis
        )
    }
}

/// The UTC calendar parts of `unix_seconds` + `nanos` (sub-millisecond precision dropped).
///
/// `None` when `nanos >= 1_000_000_000` or the instant falls outside the years 0000-9999.
pub fn utc_parts(unix_seconds: i64, nanos: u32) -> Option<UtcParts> {
    let nanos = i32::try_from(nanos).ok().filter(|n| *n < 1_000_000_000)?;
    let dt = EPOCH
        .checked_add(SignedDuration::new(unix_seconds, nanos))
        .ok()?;
    let part = |v: i64| u32::try_from(v).ok();
    Some(UtcParts {
        year: part(i64::from(dt.year()))?,
        month: part(i64::from(dt.month()))?,
        day: part(i64::from(dt.day()))?,
        hour: part(i64::from(dt.hour()))?,
        minute: part(i64::from(dt.minute()))?,
        second: part(i64::from(dt.second()))?,
        millis: part(i64::from(dt.millisecond()))?,
    })
}

/// Whole seconds since 1970-01-01T00:00:00Z of a UTC calendar date and time (negative before).
///
/// `None` for an impossible date or time (month 13, 31 April, 29 February of a common year,
/// hour 24, second 60) or a year above 9999.
pub fn unix_seconds(
    year: u32,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
) -> Option<i64> {
    let small = |v: u32| i8::try_from(v).ok();
    let date = Date::new(i16::try_from(year).ok()?, small(month)?, small(day)?).ok()?;
    let time = Time::new(small(hour)?, small(minute)?, small(second)?, 0).ok()?;
    Some(date.to_datetime(time).duration_since(EPOCH).as_secs())
}

/// The UTC parts of `ms` (epoch milliseconds), clamped to 9999-12-31T23:59:59.999 beyond.
fn utc_parts_ms(ms: u64) -> UtcParts {
    let secs = i64::try_from(ms / 1000).unwrap_or(i64::MAX);
    // ms % 1000 < 1000, so the nanoseconds are always in range.
    let nanos = u32::try_from(ms % 1000).unwrap_or(0) * 1_000_000;
    utc_parts(secs, nanos).unwrap_or(UtcParts {
        year: 9999,
        month: 12,
        day: 31,
        hour: 23,
        minute: 59,
        second: 59,
        millis: 999,
    })
}

/// `ms` since the Unix epoch as RFC 3339 UTC with milliseconds and a literal `Z`
/// (`2026-07-21T00:00:00.000Z`), as Switchboard and the test phone stamp the messages they send.
/// Instants past the year 9999 are written as 9999-12-31T23:59:59.999Z.
pub fn rfc3339_ms(ms: u64) -> String {
    utc_parts_ms(ms).rfc3339()
}

/// `ms` since the Unix epoch as `YYYY-MM-DD hh:mm:ss.mmm UTC` (the CLI's listings). Instants
/// past the year 9999 are written as 9999-12-31 23:59:59.999 UTC.
pub fn utc_text_ms(ms: u64) -> String {
    let p = utc_parts_ms(ms);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03} UTC",
        p.year, p.month, p.day, p.hour, p.minute, p.second, p.millis
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use proptest::prelude::*;

    /// The hand-written conversion this module replaced (Howard Hinnant's `civil_from_days`),
    /// kept as the reference the library must match.
    fn hinnant_civil(days: i64) -> (i64, u32, u32) {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        (yoe + era * 400 + i64::from(month <= 2), month, day)
    }

    fn hinnant_days(year: i64, month: u32, day: u32) -> i64 {
        let y = if month <= 2 { year - 1 } else { year };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let m = i64::from(month);
        let mp = if m > 2 { m - 3 } else { m + 9 };
        let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    #[test]
    fn texts() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(rfc3339_ms(1_700_000_000_000), "2023-11-14T22:13:20.000Z");
        assert_eq!(rfc3339_ms(u64::MAX), "9999-12-31T23:59:59.999Z");
        assert_eq!(
            utc_text_ms(1_700_000_000_042),
            "2023-11-14 22:13:20.042 UTC"
        );
        assert_eq!(unix_seconds(0, 1, 1, 0, 0, 0), Some(-62_167_219_200));
        assert_eq!(
            unix_seconds(9999, 12, 31, 23, 59, 59),
            Some(253_402_300_799)
        );
        assert_eq!(unix_seconds(2026, 2, 29, 0, 0, 0), None);
        assert_eq!(unix_seconds(2024, 2, 29, 24, 0, 0), None);
        assert_eq!(unix_seconds(10_000, 1, 1, 0, 0, 0), None);
        assert_eq!(utc_parts(253_402_300_800, 0), None);
        assert_eq!(utc_parts(-62_167_219_201, 0), None);
        assert_eq!(utc_parts(0, 1_000_000_000), None);
    }

    proptest! {
        #[test]
        fn matches_the_hand_written_calendar(secs in -62_167_219_200i64..253_402_300_800, ms in 0u32..1000) {
            let p = utc_parts(secs, ms * 1_000_000 + 999).unwrap();
            let (y, m, d) = hinnant_civil(secs.div_euclid(86_400));
            let rem = secs.rem_euclid(86_400) as u32;
            prop_assert_eq!((i64::from(p.year), p.month, p.day), (y, m, d));
            prop_assert_eq!((p.hour, p.minute, p.second, p.millis), (rem / 3600, rem % 3600 / 60, rem % 60, ms));
            let back = unix_seconds(p.year, p.month, p.day, p.hour, p.minute, p.second).unwrap();
            prop_assert_eq!(back, hinnant_days(y, m, d) * 86_400 + i64::from(rem));
            prop_assert_eq!(back, secs);
        }
    }
}
