//! The window of a template's stats: a number of hours or days ending with the one that is
//! now, each with its slot, the ones where nothing happened as zeros, so a chart of them
//! shows the whole window.

use coupond_domain::Timestamp;
use coupond_store::HourCounts;

const HOUR_MICROS: i64 = 3_600_000_000;
const DAY_MICROS: i64 = 24 * HOUR_MICROS;

/// How long one slot of a [`StatsWindow`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotUnit {
    /// An hour, from its first instant.
    Hour,
    /// A UTC day, from midnight.
    Day,
}

impl SlotUnit {
    fn micros(self) -> i64 {
        match self {
            SlotUnit::Hour => HOUR_MICROS,
            SlotUnit::Day => DAY_MICROS,
        }
    }
}

/// `count` hours or days, the last being the one `now` falls in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatsWindow {
    pub unit: SlotUnit,
    pub count: u32,
    /// The first slot's first instant.
    pub start: Timestamp,
}

impl StatsWindow {
    /// The `count` slots of `unit` ending with the one `now` is in (`count` at least 1).
    pub fn ending_at(now: Timestamp, unit: SlotUnit, count: u32) -> Self {
        let step = unit.micros();
        let current = now.unix_micros() - now.unix_micros().rem_euclid(step);
        let first = current - (i64::from(count.max(1)) - 1) * step;
        StatsWindow {
            unit,
            count: count.max(1),
            start: Timestamp::from_unix_micros(first).unwrap_or(Timestamp::UNIX_EPOCH),
        }
    }

    /// Every slot of the window, oldest first: the hours of `per_hour` (any order) added
    /// into the slot they fall in, zeros where none does; hours outside the window are left
    /// out.
    pub fn slots(&self, per_hour: &[HourCounts]) -> Vec<HourCounts> {
        let step = self.unit.micros();
        let start = self.start.unix_micros();
        let mut out: Vec<HourCounts> = (0..i64::from(self.count))
            .map(|i| HourCounts {
                hour: Timestamp::from_unix_micros(start + i * step)
                    .unwrap_or(Timestamp::UNIX_EPOCH),
                created: 0,
                used: 0,
                discount: 0,
                refunded: 0,
                refunded_discount: 0,
            })
            .collect();
        for h in per_hour {
            let offset = h.hour.unix_micros() - start;
            let Ok(i) = usize::try_from(offset.div_euclid(step)) else {
                continue;
            };
            if let Some(slot) = out.get_mut(i) {
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
}
