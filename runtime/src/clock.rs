//! Wall-clock time as the wire writes it: milliseconds since the Unix epoch, and ISO 8601
//! UTC text.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, of `time`.
pub(crate) fn ms_of(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_ms() -> u64 {
    ms_of(SystemTime::now())
}

/// `ms` as ISO 8601 UTC text: `2026-12-01T12:00:00Z`, or with `millis`
/// `2026-12-01T12:00:00.123Z`.
pub(crate) fn utc(ms: u64, millis: bool) -> String {
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rest = secs % 86_400;
    // Days to a civil date (proleptic Gregorian), after Howard Hinnant's algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let fraction = if millis {
        format!(".{:03}", ms % 1000)
    } else {
        String::new()
    };
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}{fraction}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::utc;

    #[test]
    fn times_are_iso_8601_utc() {
        assert_eq!(utc(0, false), "1970-01-01T00:00:00Z");
        assert_eq!(utc(1_796_140_800_123, true), "2026-12-01T16:00:00.123Z");
        assert_eq!(utc(951_782_400_000, true), "2000-02-29T00:00:00.000Z");
    }
}
