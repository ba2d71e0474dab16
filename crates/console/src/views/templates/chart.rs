//! Claims, uses and discount given as a server-rendered SVG chart: bars (claimed, used) and a
//! line (discount given) per hour or per day, laid out here and drawn by
//! `templates/partials/chart.html`. Every hour or day of the window chosen has its slot
//! across the whole width (the API answers each, zeros included); the x-axis has a tick at a
//! readable interval, the y-axes ticks at zero, half and the top; a bar of a non-zero count is
//! never drawn thinner than [`MIN_BAR`]; the legend and the tooltips say what refunds took
//! back since; an empty state says what would appear. Days are the platform's local days,
//! named by the local date the API gives; hours are UTC hours.

use coupond_api::routes::reports::{DayCount, HourCount};
use coupond_domain::Timestamp;

use crate::views::format::{at, money};

/// Drawing area, in SVG units (the whole image is 720 wide, as the partial's viewBox says):
/// the baseline and the top of the tallest bar.
pub const HEIGHT: i64 = 200;
pub const TOP: i64 = 10;
/// Left margin for the axis labels; the right one holds the discount axis.
pub const LEFT: i64 = 40;
pub const RIGHT: i64 = 660;
/// The least height of a bar (or rise of the line) showing a count above zero.
pub const MIN_BAR: i64 = 3;
/// At most this many x-axis ticks.
const MAX_TICKS: usize = 8;

/// Slots of a chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Hour,
    Day,
}

/// One hour or day as the stats give it.
#[derive(Debug, Clone)]
pub struct Slot {
    pub at: Timestamp,
    /// A day's local date in the platform's time zone (`YYYY-MM-DD`), as the API names it;
    /// empty for hours (named by their UTC time).
    pub date: String,
    pub claimed: i64,
    pub used: i64,
    pub discount: i64,
    /// Of the uses, those refunded since, and the discount they took back.
    pub refunded: i64,
    pub refunded_discount: i64,
}

impl From<&HourCount> for Slot {
    fn from(h: &HourCount) -> Self {
        Slot {
            at: h.hour,
            date: String::new(),
            claimed: h.claimed.max(0),
            used: h.used.max(0),
            discount: h.discount.max(0),
            refunded: h.refunded.max(0),
            refunded_discount: h.refunded_discount.max(0),
        }
    }
}

impl From<&DayCount> for Slot {
    fn from(d: &DayCount) -> Self {
        Slot {
            at: d.day,
            date: d.date.clone(),
            claimed: d.claimed.max(0),
            used: d.used.max(0),
            discount: d.discount.max(0),
            refunded: d.refunded.max(0),
            refunded_discount: d.refunded_discount.max(0),
        }
    }
}

/// One slot: two bars side by side (x and widths in SVG units, one decimal).
#[derive(Debug, Clone)]
pub struct Bar {
    pub x: String,
    pub used_x: String,
    pub w: String,
    pub claimed_y: i64,
    pub claimed_h: i64,
    pub used_y: i64,
    pub used_h: i64,
    /// The tooltip.
    pub label: String,
}

/// A labelled tick: where (x for the x-axis, y for the others) and what it reads.
#[derive(Debug, Clone)]
pub struct Tick {
    pub at: String,
    pub label: String,
    /// `start`, `middle` or `end`: the first and last x labels stay inside the chart.
    pub anchor: &'static str,
}

#[derive(Debug, Clone, Default)]
pub struct Chart {
    pub bars: Vec<Bar>,
    pub x_ticks: Vec<Tick>,
    /// The counts' axis (left) and the discount's (right).
    pub y_ticks: Vec<Tick>,
    pub money_ticks: Vec<Tick>,
    /// The discount line's points (`x,y x,y ...`).
    pub line: String,
    /// The window's first and last slot, in words.
    pub first: String,
    pub last: String,
    pub total_claimed: i64,
    pub total_used: i64,
    pub total_refunded: i64,
    pub total_discount: String,
    pub total_refunded_discount: String,
    /// Whether any use in the window was refunded since.
    pub any_refund: bool,
    /// `hour` or `day`.
    pub unit: &'static str,
}

/// SVG units with one decimal.
fn units(v: f64) -> String {
    format!("{v:.1}")
}

/// The height of `v` on a scale whose top is `max`: at least [`MIN_BAR`] when `v` is above 0.
fn height(v: i64, max: i64) -> i64 {
    if v <= 0 || max <= 0 {
        return 0;
    }
    (v * (HEIGHT - TOP) / max).max(MIN_BAR)
}

/// Every how many slots the x-axis has a tick: the smallest of the usual steps (hours that
/// divide a day, days of a week or a month) giving at most [`MAX_TICKS`].
fn step(unit: Unit, n: usize) -> usize {
    let steps: &[usize] = match unit {
        Unit::Hour => &[1, 2, 3, 6, 12, 24],
        Unit::Day => &[1, 2, 5, 7, 10, 15, 30],
    };
    let fits = steps.iter().copied().find(|s| n.div_ceil(*s) <= MAX_TICKS);
    fits.unwrap_or(steps[steps.len() - 1])
}

/// The slots to tick: hours on the clock's multiples of the step (midnights, noons...),
/// days counted back from the last, so today has its tick.
fn ticked(unit: Unit, slots: &[Slot], step: usize) -> Vec<usize> {
    let n = slots.len();
    (0..n)
        .filter(|i| match unit {
            Unit::Hour => usize::from(slots[*i].at.datetime().hour()).is_multiple_of(step),
            Unit::Day => (n - 1 - i).is_multiple_of(step),
        })
        .collect()
}

/// A slot's name on the x-axis: an hour as `HH:00` (`MM-DD` at midnight), a day as `MM-DD`.
fn tick_label(unit: Unit, slot: &Slot) -> String {
    let t = slot.at;
    let s = t.to_string();
    match unit {
        Unit::Hour if t.datetime().hour() != 0 => format!("{}:00", &s[11..13]),
        Unit::Hour => s[5..10].to_owned(),
        Unit::Day => day_name(slot).get(5..10).unwrap_or_default().to_owned(),
    }
}

/// A slot's name in words (the window's ends, tooltips).
fn name(unit: Unit, slot: &Slot) -> String {
    match unit {
        Unit::Hour => at(slot.at),
        Unit::Day => day_name(slot),
    }
}

/// A day's local date as the API named it (`YYYY-MM-DD`), or, from an older server without
/// it, the UTC date of its first instant.
fn day_name(slot: &Slot) -> String {
    if slot.date.len() == 10 {
        return slot.date.clone();
    }
    slot.at.to_string()[..10].to_owned()
}

/// Ticks at 0, half and the top of an axis whose top is `max`, labelled by `show`.
fn axis(max: i64, show: impl Fn(i64) -> String) -> Vec<Tick> {
    let mut values = vec![0, max / 2, max];
    values.dedup();
    values
        .into_iter()
        .map(|v| Tick {
            at: (HEIGHT - v * (HEIGHT - TOP) / max.max(1)).to_string(),
            label: show(v),
            anchor: "end",
        })
        .collect()
}

impl Chart {
    /// From the stats' slots (every hour or day of the window, oldest first).
    pub fn of(slots: &[Slot], unit: Unit) -> Self {
        let max = slots
            .iter()
            .map(|b| b.claimed.max(b.used))
            .max()
            .unwrap_or(0);
        let top_discount = slots.iter().map(|b| b.discount).max().unwrap_or(0);
        if slots.is_empty() || (max == 0 && top_discount == 0) {
            return Chart::default();
        }
        let n = slots.len();
        let slot = (RIGHT - LEFT) as f64 / n as f64;
        let x = |i: usize| LEFT as f64 + i as f64 * slot;
        let w = slot * 0.4;
        let mut line = Vec::new();
        let bars = slots
            .iter()
            .enumerate()
            .map(|(i, b)| {
                if top_discount > 0 {
                    let y = HEIGHT - height(b.discount, top_discount);
                    line.push(format!("{},{y}", units(x(i) + slot / 2.0)));
                }
                Bar {
                    x: units(x(i) + slot * 0.1),
                    used_x: units(x(i) + slot * 0.1 + w),
                    w: units(w),
                    claimed_h: height(b.claimed, max),
                    claimed_y: HEIGHT - height(b.claimed, max),
                    used_h: height(b.used, max),
                    used_y: HEIGHT - height(b.used, max),
                    label: tooltip(unit, b),
                }
            })
            .collect();
        let step = step(unit, n);
        let x_ticks = ticked(unit, slots, step)
            .into_iter()
            .map(|i| Tick {
                at: units(x(i) + slot / 2.0),
                label: tick_label(unit, &slots[i]),
                anchor: "middle",
            })
            .collect();
        let sum = |f: fn(&Slot) -> i64| slots.iter().map(f).sum::<i64>();
        Chart {
            bars,
            x_ticks,
            y_ticks: axis(max, |v| v.to_string()),
            money_ticks: axis(top_discount, money),
            line: line.join(" "),
            first: name(unit, &slots[0]),
            last: name(unit, &slots[n - 1]),
            total_claimed: sum(|b| b.claimed),
            total_used: sum(|b| b.used),
            total_refunded: sum(|b| b.refunded),
            total_discount: money(sum(|b| b.discount)),
            total_refunded_discount: money(sum(|b| b.refunded_discount)),
            any_refund: sum(|b| b.refunded) > 0,
            unit: match unit {
                Unit::Hour => "hour",
                Unit::Day => "day",
            },
        }
    }

    pub fn is_empty(&self) -> bool {
        self.bars.is_empty()
    }
}

/// A slot's tooltip: its counts, and what refunds took back since where they did.
fn tooltip(unit: Unit, b: &Slot) -> String {
    let refunds = if b.refunded > 0 {
        format!(
            " ({} refunded since, {} taken back)",
            b.refunded,
            money(b.refunded_discount)
        )
    } else {
        String::new()
    };
    format!(
        "{}: {} claimed, {} used, {} discount given{refunds}",
        name(unit, b),
        b.claimed,
        b.used,
        money(b.discount)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(at: &str, claimed: i64, used: i64, discount: i64) -> Slot {
        Slot {
            at: Timestamp::parse(at).unwrap(),
            date: String::new(),
            claimed,
            used,
            discount,
            refunded: 0,
            refunded_discount: 0,
        }
    }

    /// 48 hours ending at 2026-11-24 11:00, with `busy` at the given index.
    fn hours(busy: &[(usize, i64, i64, i64)]) -> Vec<Slot> {
        let start = Timestamp::parse("2026-11-22T12:00:00Z").unwrap();
        (0..48)
            .map(|i| {
                let t = start.plus(time::Duration::hours(i as i64)).to_string();
                let (_, c, u, d) = busy
                    .iter()
                    .find(|b| b.0 == i)
                    .copied()
                    .unwrap_or((i, 0, 0, 0));
                slot(&t, c, u, d)
            })
            .collect()
    }

    #[test]
    fn every_slot_has_its_place_across_the_width() {
        let c = Chart::of(&hours(&[(10, 1000, 5, 1000), (47, 1, 0, 0)]), Unit::Hour);
        assert_eq!(c.bars.len(), 48);
        assert_eq!(c.bars[0].x, "41.3");
        // The last slot ends at the right edge.
        let last: f64 = c.bars[47].x.parse().unwrap();
        assert!((last + (RIGHT - LEFT) as f64 / 48.0 * 0.9 - RIGHT as f64).abs() < 0.2);
        assert_eq!(c.bars[10].claimed_h, HEIGHT - TOP);
        // 1 of 1000 is still seen.
        assert_eq!(c.bars[47].claimed_h, MIN_BAR);
        assert_eq!(c.bars[9].claimed_h, 0);
        assert_eq!(c.line.split(' ').count(), 48);
        assert_eq!(
            (c.first.as_str(), c.last.as_str()),
            ("2026-11-22 12:00 UTC", "2026-11-24 11:00 UTC")
        );
    }

    #[test]
    fn ticks_fall_on_round_hours_and_days() {
        let c = Chart::of(&hours(&[(3, 2, 1, 500)]), Unit::Hour);
        let labels: Vec<&str> = c.x_ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(
            labels,
            ["12:00", "18:00", "11-23", "06:00", "12:00", "18:00", "11-24", "06:00"],
            "every 6 hours over 48"
        );
        let y: Vec<&str> = c.y_ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(y, ["0", "1", "2"]);
        let start = Timestamp::parse("2026-10-26T00:00:00Z").unwrap();
        let days: Vec<Slot> = (0..30)
            .map(|i| slot(&start.plus(time::Duration::days(i)).to_string(), 1, 0, 0))
            .collect();
        let c = Chart::of(&days, Unit::Day);
        assert_eq!(c.bars.len(), 30);
        let labels: Vec<&str> = c.x_ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(
            labels,
            ["10-30", "11-04", "11-09", "11-14", "11-19", "11-24"]
        );
        // Local days (Shanghai): named by the date the API gives, not the UTC one.
        let local: Vec<Slot> = (0..2)
            .map(|i| Slot {
                date: format!("2027-01-{:02}", 9 + i),
                ..slot(&format!("2027-01-{:02}T16:00:00Z", 8 + i), 1, 0, 0)
            })
            .collect();
        let c = Chart::of(&local, Unit::Day);
        assert_eq!(
            (c.first.as_str(), c.last.as_str()),
            ("2027-01-09", "2027-01-10")
        );
        assert!(
            c.bars[1].label.starts_with("2027-01-10:"),
            "{}",
            c.bars[1].label
        );
        assert!(Chart::of(&[], Unit::Hour).is_empty());
        assert!(Chart::of(&hours(&[]), Unit::Hour).is_empty());
    }
}
