//! The window of a template's stats: a number of hours or days ending with the one that is
//! now, each with its slot, the ones where nothing happened as zeros, so a chart of them
//! shows the whole window.
//!
//! Days are local days of the platform's time zone ([`Zone`]): the store counts by UTC hour
//! and each hour is added into the local day it begins in. That is exact for zones whose
//! offset is a whole number of hours (most of them, daylight saving time included); in a zone
//! offset by a half or three quarters of an hour (India, Nepal, parts of Australia) the hour
//! that straddles local midnight is counted wholly in the day it begins in.

use coupond_domain::{Timestamp, Zone};
use coupond_store::HourCounts;

const HOUR_MICROS: i64 = 3_600_000_000;

/// How long one slot of a [`StatsWindow`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotUnit {
    /// An hour, from its first instant.
    Hour,
    /// A local day of the window's zone, from local midnight.
    Day,
}

/// `count` hours or days, the last being the one `now` falls in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatsWindow {
    pub unit: SlotUnit,
    pub count: u32,
    /// The first slot's first instant.
    pub start: Timestamp,
    /// Whose days the day slots are.
    pub zone: Zone,
    /// The first slot's local day number (days only).
    first_day: i64,
}

impl StatsWindow {
    /// The `count` slots of `unit` ending with the one `now` is in (`count` at least 1), days
    /// being UTC days.
    pub fn ending_at(now: Timestamp, unit: SlotUnit, count: u32) -> Self {
        Self::in_zone(now, unit, count, Zone::UTC)
    }

    /// As [`StatsWindow::ending_at`], days being local days of `zone`.
    pub fn in_zone(now: Timestamp, unit: SlotUnit, count: u32, zone: Zone) -> Self {
        let count = count.max(1);
        let back = i64::from(count) - 1;
        match unit {
            SlotUnit::Hour => {
                let current = now.unix_micros() - now.unix_micros().rem_euclid(HOUR_MICROS);
                let first = current - back * HOUR_MICROS;
                StatsWindow {
                    unit,
                    count,
                    start: Timestamp::from_unix_micros(first).unwrap_or(Timestamp::UNIX_EPOCH),
                    zone,
                    first_day: 0,
                }
            }
            SlotUnit::Day => {
                let first_day = zone.day_of(now) - back;
                StatsWindow {
                    unit,
                    count,
                    start: zone.day_start(first_day).unwrap_or(Timestamp::UNIX_EPOCH),
                    zone,
                    first_day,
                }
            }
        }
    }

    /// The first instant of slot `i`.
    fn slot_start(&self, i: i64) -> Timestamp {
        let at = match self.unit {
            SlotUnit::Hour => {
                Timestamp::from_unix_micros(self.start.unix_micros() + i * HOUR_MICROS)
            }
            SlotUnit::Day => self.zone.day_start(self.first_day + i),
        };
        at.unwrap_or(Timestamp::UNIX_EPOCH)
    }

    /// The slot an hour beginning at `hour` falls in, if it is in the window.
    fn slot_of(&self, hour: Timestamp) -> Option<usize> {
        let i = match self.unit {
            SlotUnit::Hour => {
                (hour.unix_micros() - self.start.unix_micros()).div_euclid(HOUR_MICROS)
            }
            SlotUnit::Day => self.zone.day_of(hour) - self.first_day,
        };
        usize::try_from(i).ok().filter(|i| *i < self.count as usize)
    }

    /// Every slot of the window, oldest first: the hours of `per_hour` (any order) added
    /// into the slot they fall in, zeros where none does; hours outside the window are left
    /// out.
    pub fn slots(&self, per_hour: &[HourCounts]) -> Vec<HourCounts> {
        let mut out: Vec<HourCounts> = (0..i64::from(self.count))
            .map(|i| HourCounts {
                hour: self.slot_start(i),
                created: 0,
                used: 0,
                discount: 0,
                refunded: 0,
                refunded_discount: 0,
            })
            .collect();
        for h in per_hour {
            if let Some(slot) = self.slot_of(h.hour).and_then(|i| out.get_mut(i)) {
                slot.created += h.created;
                slot.used += h.used;
                slot.discount += h.discount;
                slot.refunded += h.refunded;
                slot.refunded_discount += h.refunded_discount;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn hour(s: &str, created: i64) -> HourCounts {
        HourCounts {
            hour: at(s),
            created,
            used: 0,
            discount: 0,
            refunded: 0,
            refunded_discount: 0,
        }
    }

    #[test]
    fn every_hour_of_the_window_has_its_slot() {
        let w = StatsWindow::ending_at(at("2026-11-24T12:30:00Z"), SlotUnit::Hour, 48);
        assert_eq!(w.start, at("2026-11-22T13:00:00Z"));
        let slots = w.slots(&[
            hour("2026-11-22T12:00:00Z", 7), // before the window
            hour("2026-11-24T12:00:00Z", 2),
            hour("2026-11-23T00:00:00Z", 1),
        ]);
        assert_eq!(slots.len(), 48);
        assert_eq!(slots[47].hour, at("2026-11-24T12:00:00Z"));
        assert_eq!(slots.iter().map(|s| s.created).sum::<i64>(), 3);
        assert_eq!((slots[11].created, slots[47].created), (1, 2));
    }

    #[test]
    fn days_add_up_their_hours() {
        let w = StatsWindow::ending_at(at("2026-11-24T12:30:00Z"), SlotUnit::Day, 30);
        assert_eq!(w.start, at("2026-10-26T00:00:00Z"));
        let slots = w.slots(&[
            hour("2026-11-24T01:00:00Z", 2),
            hour("2026-11-24T11:00:00Z", 3),
        ]);
        assert_eq!(slots.len(), 30);
        assert_eq!((slots[28].created, slots[29].created), (0, 5));
    }

    #[test]
    fn days_are_local_days_of_the_zone() {
        let z = Zone::parse("Asia/Shanghai").unwrap();
        // 2027-01-10 09:00 local; a claim at 2027-01-09T17:00Z is 01:00 local on the 10th.
        let w = StatsWindow::in_zone(at("2027-01-10T01:00:00Z"), SlotUnit::Day, 2, z);
        assert_eq!(w.start, at("2027-01-08T16:00:00Z"));
        let slots = w.slots(&[
            hour("2027-01-09T17:00:00Z", 4),
            hour("2027-01-09T15:00:00Z", 1),
            hour("2027-01-08T15:00:00Z", 9), // the 8th, local: before the window
        ]);
        assert_eq!(slots.len(), 2);
        assert_eq!(slots[1].hour, at("2027-01-09T16:00:00Z"));
        assert_eq!((slots[0].created, slots[1].created), (1, 4));
        assert_eq!(z.date_text(slots[1].hour), "2027-01-10");
    }
}
