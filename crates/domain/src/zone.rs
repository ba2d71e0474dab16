//! Local days and hours: the platform's time zone (and a user's own, when known).
//!
//! Every instant coupond stores is UTC ([`Timestamp`]); a [`Zone`] says where a day begins
//! for the people who read it: "today" in the console and reports, the days of charts, the
//! day a reminder is about and the hour it is sent. A local day is numbered like a UTC one
//! (days since 1970-01-01), counted on the local calendar.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Datelike, LocalResult, NaiveDate, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;

use crate::error::DomainError;
use crate::time::Timestamp;

const DAY_US: i64 = 86_400_000_000;

/// An IANA time zone (`Asia/Shanghai`, `Europe/Berlin`, `UTC`). Built only by [`Zone::parse`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Zone(Tz);

impl Zone {
    /// Coordinated Universal Time: every day a UTC day (coupond's default).
    pub const UTC: Zone = Zone(Tz::UTC);

    /// `s` as an IANA zone name; field `time_zone` on error.
    pub fn parse(s: &str) -> Result<Zone, DomainError> {
        Tz::from_str(s.trim()).map(Zone).map_err(|_| {
            DomainError::invalid(
                "time_zone",
                "invalid_time_zone",
                "must be an IANA time zone name such as Asia/Shanghai or UTC",
            )
        })
    }

    /// The IANA name.
    pub fn name(&self) -> &'static str {
        self.0.name()
    }

    /// The local day `t` falls on (days since 1970-01-01 on this zone's calendar).
    pub fn day_of(&self, t: Timestamp) -> i64 {
        let local = self.local(t);
        let date = local.date_naive();
        i64::from(date.num_days_from_ce()) - i64::from(EPOCH_CE_DAYS)
    }

    /// The local day the month of local `day` begins on.
    pub fn month_first_day(day: i64) -> Option<i64> {
        let first = date_of(day)?.with_day(1)?;
        Some(i64::from(first.num_days_from_ce()) - i64::from(EPOCH_CE_DAYS))
    }

    /// The first instant of local `day`. Where a day begins in a gap (a zone that moved its
    /// clocks at midnight), its first existing instant.
    pub fn day_start(&self, day: i64) -> Option<Timestamp> {
        self.at(day, 0, 0)
    }

    /// The instant of `hour:minute` local time on `day`. A time skipped by a clock change
    /// moves forward to the first instant after the gap; a repeated one takes its earlier
    /// occurrence.
    pub fn at(&self, day: i64, hour: u32, minute: u32) -> Option<Timestamp> {
        let date = date_of(day)?;
        let mut naive = date.and_time(NaiveTime::from_hms_opt(hour, minute, 0)?);
        // A gap lasts at most a few hours: step forward by quarter hours until the time exists.
        for _ in 0..=16 {
            match self.0.from_local_datetime(&naive) {
                LocalResult::Single(dt) | LocalResult::Ambiguous(dt, _) => return stamp(dt),
                LocalResult::None => naive += chrono::Duration::minutes(15),
            }
        }
        None
    }

    /// The local hour and minute of `t`.
    pub fn hour_minute(&self, t: Timestamp) -> (u32, u32) {
        use chrono::Timelike;
        let local = self.local(t);
        (local.hour(), local.minute())
    }

    /// `t` as local RFC 3339 text with its offset (`2027-01-10T01:00:00+08:00`).
    pub fn format(&self, t: Timestamp) -> String {
        self.local(t)
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
    }

    /// `t`'s local date as `YYYY-MM-DD`.
    pub fn date_text(&self, t: Timestamp) -> String {
        self.local(t).date_naive().format("%Y-%m-%d").to_string()
    }

    fn local(&self, t: Timestamp) -> DateTime<Tz> {
        let micros = t.unix_micros();
        let utc =
            DateTime::<Utc>::from_timestamp_micros(micros).unwrap_or(DateTime::<Utc>::UNIX_EPOCH);
        utc.with_timezone(&self.0)
    }
}

/// Days from 0001-01-01 (day 1 of the common era) to 1970-01-01.
const EPOCH_CE_DAYS: i32 = 719_163;

fn date_of(day: i64) -> Option<NaiveDate> {
    let ce = i32::try_from(day.checked_add(i64::from(EPOCH_CE_DAYS))?).ok()?;
    NaiveDate::from_num_days_from_ce_opt(ce)
}

fn stamp(dt: DateTime<Tz>) -> Option<Timestamp> {
    let micros = dt.timestamp_micros();
    // Keep the `DAY_US` arithmetic of callers far from overflow: instants before 1970 are not
    // stored anyway.
    if micros < -DAY_US {
        return None;
    }
    Timestamp::from_unix_micros(micros)
}

impl Default for Zone {
    fn default() -> Self {
        Zone::UTC
    }
}

impl fmt::Display for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Debug for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Zone({})", self.name())
    }
}

impl serde::Serialize for Zone {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Zone {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Zone::parse(&s).map_err(|e| serde::de::Error::custom(e.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    #[test]
    fn a_shanghai_day_begins_at_sixteen_utc_the_day_before() {
        let z = Zone::parse("Asia/Shanghai").unwrap();
        // 2027-01-10 01:00 local is 2027-01-09 17:00 UTC: the local day is the 10th.
        let t = ts("2027-01-09T17:00:00Z");
        assert_eq!(Zone::UTC.day_of(t) + 1, z.day_of(t));
        assert_eq!(z.date_text(t), "2027-01-10");
        let start = z.day_start(z.day_of(t)).unwrap();
        assert_eq!(start, ts("2027-01-09T16:00:00Z"));
        assert_eq!(z.at(z.day_of(t), 9, 0).unwrap(), ts("2027-01-10T01:00:00Z"));
        assert_eq!(z.format(t), "2027-01-10T01:00:00+08:00");
        assert_eq!(z.hour_minute(t), (1, 0));
    }

    #[test]
    fn utc_days_are_unix_days() {
        let t = ts("2026-11-28T23:59:59Z");
        assert_eq!(Zone::UTC.day_of(t), t.unix_micros().div_euclid(DAY_US));
        assert_eq!(Zone::UTC.day_start(0).unwrap(), Timestamp::UNIX_EPOCH);
    }

    #[test]
    fn a_time_skipped_by_a_clock_change_moves_past_the_gap() {
        // Berlin skipped 02:00-03:00 on 2027-03-28.
        let z = Zone::parse("Europe/Berlin").unwrap();
        let day = z.day_of(ts("2027-03-28T12:00:00Z"));
        assert_eq!(z.at(day, 2, 30).unwrap(), ts("2027-03-28T01:00:00Z"));
        // And repeated 02:00-03:00 on 2027-10-31: the earlier one.
        let day = z.day_of(ts("2027-10-31T12:00:00Z"));
        assert_eq!(z.at(day, 2, 30).unwrap(), ts("2027-10-31T00:30:00Z"));
    }

    #[test]
    fn names_are_checked() {
        assert_eq!(
            Zone::parse("Mars/Olympus").unwrap_err().code,
            "invalid_time_zone"
        );
        assert_eq!(Zone::parse(" UTC ").unwrap(), Zone::UTC);
        let z: Zone = serde_json::from_str("\"Asia/Shanghai\"").unwrap();
        assert_eq!(serde_json::to_string(&z).unwrap(), "\"Asia/Shanghai\"");
    }
}
