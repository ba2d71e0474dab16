//! Claims, uses and discount given as a server-rendered SVG chart: bars (claimed, used) and a
//! line (discount given) per hour or per day, laid out here and drawn by
//! `templates/partials/chart.html`; a y-axis with its top value on each side, labels at both
//! ends, a legend, and an empty state that says what would appear.

use coupond_api::routes::reports::HourCount;

use crate::views::format::{minute, money};

/// Drawing area, in SVG units (the whole image is 720 wide, as the partial's viewBox says).
pub const HEIGHT: i64 = 200;
/// Left margin for the axis labels; the right one holds the discount axis.
pub const LEFT: i64 = 40;
pub const RIGHT: i64 = 660;

/// Buckets of a chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Hour,
    Day,
}

/// One bucket: two bars side by side.
#[derive(Debug, Clone)]
pub struct Bar {
    pub x: i64,
    pub w: i64,
    pub claimed_y: i64,
    pub claimed_h: i64,
    pub used_y: i64,
    pub used_h: i64,
    /// The tooltip.
    pub label: String,
}

#[derive(Debug, Clone, Default)]
pub struct Chart {
    pub bars: Vec<Bar>,
    pub max: i64,
    /// The discount line's points (`x,y x,y ...`) and its top value, in money.
    pub line: String,
    pub max_discount: String,
    pub first: String,
    pub last: String,
    pub total_claimed: i64,
    pub total_used: i64,
    pub total_discount: String,
    /// `hour` or `day`.
    pub unit: &'static str,
}

/// An hour's or a day's counts.
struct Bucket {
    at: String,
    claimed: i64,
    used: i64,
    discount: i64,
}

/// The stats' `per_hour` (`[{hour, claimed, used, discount}]`, oldest first) in buckets of
/// `unit` (a day sums its hours).
fn buckets(per_hour: &[HourCount], unit: Unit) -> Vec<Bucket> {
    let mut out: Vec<Bucket> = Vec::new();
    for h in per_hour {
        let hour = h.hour.to_string();
        let at = match unit {
            Unit::Hour => hour,
            Unit::Day => hour.chars().take(10).collect(),
        };
        let (claimed, used, discount) = (h.claimed.max(0), h.used.max(0), h.discount.max(0));
        match out.last_mut() {
            Some(b) if b.at == at => {
                b.claimed += claimed;
                b.used += used;
                b.discount += discount;
            }
            _ => out.push(Bucket {
                at,
                claimed,
                used,
                discount,
            }),
        }
    }
    out
}

impl Chart {
    /// From the stats' `per_hour`, per hour or per day.
    pub fn of(per_hour: &[HourCount], unit: Unit) -> Self {
        let buckets = buckets(per_hour, unit);
        let max = buckets
            .iter()
            .map(|b| b.claimed.max(b.used))
            .max()
            .unwrap_or(0);
        if buckets.is_empty() || max == 0 {
            return Chart::default();
        }
        let label = |at: &str| match unit {
            Unit::Hour => minute(at),
            Unit::Day => at.to_owned(),
        };
        // Wide enough to read, never wider than 40 units a bucket.
        let slot = ((RIGHT - LEFT) / buckets.len() as i64).clamp(2, 40);
        let w = (slot / 2 - 1).max(1);
        let height = |v: i64| v * (HEIGHT - 10) / max;
        let top_discount = buckets.iter().map(|b| b.discount).max().unwrap_or(0);
        let mut line = Vec::new();
        let bars = buckets
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let x = LEFT + i as i64 * slot;
                if top_discount > 0 {
                    let y = HEIGHT - b.discount * (HEIGHT - 10) / top_discount;
                    line.push(format!("{},{y}", x + w));
                }
                Bar {
                    x,
                    w,
                    claimed_h: height(b.claimed),
                    claimed_y: HEIGHT - height(b.claimed),
                    used_h: height(b.used),
                    used_y: HEIGHT - height(b.used),
                    label: format!(
                        "{}: {} claimed, {} used, {} discount given",
                        label(&b.at),
                        b.claimed,
                        b.used,
                        money(b.discount)
                    ),
                }
            })
            .collect();
        Chart {
            bars,
            max,
            line: line.join(" "),
            max_discount: money(top_discount),
            first: label(&buckets[0].at),
            last: label(&buckets[buckets.len() - 1].at),
            total_claimed: buckets.iter().map(|b| b.claimed).sum(),
            total_used: buckets.iter().map(|b| b.used).sum(),
            total_discount: money(buckets.iter().map(|b| b.discount).sum()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Hours as the API answers them.
    fn hours(v: serde_json::Value) -> Vec<HourCount> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn bars_scale_to_the_busiest_hour() {
        let c = Chart::of(
            &hours(json!([
                {"hour": "2026-11-24T10:00:00Z", "claimed": 10, "used": 5, "discount": 1000},
                {"hour": "2026-11-24T11:00:00Z", "claimed": 0, "used": 0, "discount": 0},
            ])),
            Unit::Hour,
        );
        assert_eq!((c.max, c.total_claimed, c.total_used), (10, 10, 5));
        assert_eq!(c.bars[0].claimed_h, HEIGHT - 10);
        assert_eq!(c.bars[0].used_h, (HEIGHT - 10) / 2);
        assert_eq!(c.bars[1].claimed_h, 0);
        assert_eq!(
            (c.total_discount.as_str(), c.line.split(' ').count()),
            ("10.00", 2)
        );
        assert!(Chart::of(&[], Unit::Hour).is_empty());
    }

    #[test]
    fn days_add_up_their_hours() {
        let per_hour = hours(json!([
            {"hour": "2026-11-23T22:00:00Z", "claimed": 1, "used": 0, "discount": 0},
            {"hour": "2026-11-24T10:00:00Z", "claimed": 2, "used": 1, "discount": 500},
            {"hour": "2026-11-24T11:00:00Z", "claimed": 3, "used": 1, "discount": 700},
        ]));
        let c = Chart::of(&per_hour, Unit::Day);
        assert_eq!(c.bars.len(), 2);
        assert_eq!(
            (c.first.as_str(), c.last.as_str()),
            ("2026-11-23", "2026-11-24")
        );
        assert!(
            c.bars[1]
                .label
                .contains("5 claimed, 2 used, 12.00 discount"),
            "{}",
            c.bars[1].label
        );
    }
}
