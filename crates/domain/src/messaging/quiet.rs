//! Quiet hours: the local hours a channel sends nothing (no SMS at 3 a.m.). A message due
//! inside them waits for their end, in the recipient's own time zone.

use std::fmt;

use crate::error::DomainError;
use crate::time::Timestamp;
use crate::zone::Zone;

/// `from`-`to` local time, minutes since midnight; `from > to` spans midnight
/// (`21:00-08:00`), `from == to` is no quiet hours at all.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct QuietHours {
    from: u32,
    to: u32,
}

impl QuietHours {
    /// No quiet hours.
    pub const NONE: QuietHours = QuietHours { from: 0, to: 0 };

    /// Parses `HH:MM-HH:MM` (or an empty text: none); field `quiet_hours` on error.
    pub fn parse(s: &str) -> Result<QuietHours, DomainError> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(Self::NONE);
        }
        let bad = || {
            DomainError::invalid(
                "quiet_hours",
                "invalid_quiet_hours",
                "must be local times HH:MM-HH:MM, such as 21:00-08:00",
            )
        };
        let (a, b) = s.split_once('-').ok_or_else(bad)?;
        let minutes = |t: &str| -> Option<u32> {
            let (h, m) = t.trim().split_once(':')?;
            let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
            (h < 24 && m < 60).then_some(h * 60 + m)
        };
        Ok(QuietHours {
            from: minutes(a).ok_or_else(bad)?,
            to: minutes(b).ok_or_else(bad)?,
        })
    }

    /// Whether local time `minute` (since midnight) is quiet.
    fn quiet_at(&self, minute: u32) -> bool {
        match self.from.cmp(&self.to) {
            std::cmp::Ordering::Equal => false,
            std::cmp::Ordering::Less => (self.from..self.to).contains(&minute),
            std::cmp::Ordering::Greater => minute >= self.from || minute < self.to,
        }
    }

    /// The first instant at or after `t` outside the quiet hours in `zone`: `t` itself when it
    /// is not quiet, else the quiet hours' end that day or the next.
    pub fn next_allowed(&self, t: Timestamp, zone: &Zone) -> Timestamp {
        let (h, m) = zone.hour_minute(t);
        let minute = h * 60 + m;
        if !self.quiet_at(minute) {
            return t;
        }
        let day = zone.day_of(t);
        let end_day = if minute >= self.to { day + 1 } else { day };
        zone.at(end_day, self.to / 60, self.to % 60).unwrap_or(t)
    }
}

impl fmt::Display for QuietHours {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.from == self.to {
            return f.write_str("");
        }
        write!(
            f,
            "{:02}:{:02}-{:02}:{:02}",
            self.from / 60,
            self.from % 60,
            self.to / 60,
            self.to % 60
        )
    }
}

impl fmt::Debug for QuietHours {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "QuietHours({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    #[test]
    fn a_message_due_at_night_waits_for_the_morning_in_the_users_zone() {
        let q = QuietHours::parse("21:00-08:00").unwrap();
        let sh = Zone::parse("Asia/Shanghai").unwrap();
        // 23:30 local: waits for 08:00 the next local day (00:00 UTC).
        assert_eq!(
            q.next_allowed(ts("2027-01-09T15:30:00Z"), &sh),
            ts("2027-01-10T00:00:00Z")
        );
        // 03:00 local: 08:00 the same local day.
        assert_eq!(
            q.next_allowed(ts("2027-01-09T19:00:00Z"), &sh),
            ts("2027-01-10T00:00:00Z")
        );
        // 10:00 local: now.
        assert_eq!(
            q.next_allowed(ts("2027-01-10T02:00:00Z"), &sh),
            ts("2027-01-10T02:00:00Z")
        );
        // The same instant in UTC is 02:00: not quiet there under 01:00-02:00's end.
        assert_eq!(q.to_string(), "21:00-08:00");
    }

    #[test]
    fn bad_and_empty_quiet_hours() {
        assert_eq!(QuietHours::parse("").unwrap(), QuietHours::NONE);
        let t = ts("2027-01-09T23:00:00Z");
        assert_eq!(QuietHours::NONE.next_allowed(t, &Zone::UTC), t);
        assert_eq!(
            QuietHours::parse("25:00-08:00").unwrap_err().code,
            "invalid_quiet_hours"
        );
        let day = QuietHours::parse("13:00-14:00").unwrap();
        assert_eq!(
            day.next_allowed(ts("2027-01-09T13:30:00Z"), &Zone::UTC),
            ts("2027-01-09T14:00:00Z")
        );
    }
}
