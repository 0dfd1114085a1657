//! Times as people read them.

use jiff::tz::TimeZone;
use jiff::Timestamp;

/// `YYYY-MM-DD HH:MM` in the user's time zone, from unix milliseconds.
pub fn local_time(unix_ms: i64) -> String {
    time_in(unix_ms, &TimeZone::system())
}

fn time_in(unix_ms: i64, zone: &TimeZone) -> String {
    match Timestamp::from_millisecond(unix_ms) {
        Ok(t) => t
            .to_zoned(zone.clone())
            .strftime("%Y-%m-%d %H:%M")
            .to_string(),
        Err(_) => "-".into(),
    }
}

/// `m:ss` or `h:mm:ss`.
pub fn clock(seconds: f64) -> String {
    let s = seconds.max(0.0) as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        let utc = TimeZone::UTC;
        assert_eq!(time_in(0, &utc), "1970-01-01 00:00");
        // `date -u -d @1795340000`: 2026-11-22 09:33:20 UTC.
        assert_eq!(time_in(1_795_340_000_000, &utc), "2026-11-22 09:33");
        assert_eq!(time_in(951_782_400_000, &utc), "2000-02-29 00:00");
        let two_hours_east = TimeZone::fixed(jiff::tz::offset(2));
        assert_eq!(
            time_in(1_795_340_000_000, &two_hours_east),
            "2026-11-22 11:33"
        );
        assert_eq!(clock(75.9), "1:15");
        assert_eq!(clock(3725.0), "1:02:05");
    }
}
