//! Claims and uses per hour as a server-rendered SVG bar chart: bars laid out here, drawn by
//! `templates/partials/chart.html`; a y-axis with its top value, hour labels at both ends,
//! a legend, and an empty state that says what would appear.

use serde_json::Value;

use crate::views::format::instant;

/// Drawing area, in SVG units.
pub const WIDTH: i64 = 720;
pub const HEIGHT: i64 = 200;
/// Left margin for the axis labels.
pub const LEFT: i64 = 40;

/// One hour: two bars side by side.
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
    pub first: String,
    pub last: String,
    pub total_claimed: i64,
    pub total_used: i64,
}

impl Chart {
    /// From the stats' `per_hour` (`[{hour, claimed, used}]`, oldest first).
    pub fn of(per_hour: &Value) -> Self {
        let hours: Vec<&Value> = per_hour.as_array().into_iter().flatten().collect();
        let n = |h: &Value, k: &str| h[k].as_i64().unwrap_or(0).max(0);
        let max = hours
            .iter()
            .map(|h| n(h, "claimed").max(n(h, "used")))
            .max()
            .unwrap_or(0);
        if hours.is_empty() || max == 0 {
            return Chart::default();
        }
        // Wide enough to read, never wider than 40 units an hour.
        let slot = ((WIDTH - LEFT) / hours.len() as i64).clamp(2, 40);
        let w = (slot / 2 - 1).max(1);
        let height = |v: i64| v * (HEIGHT - 10) / max;
        let bars = hours
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let (c, u) = (n(h, "claimed"), n(h, "used"));
                let x = LEFT + i as i64 * slot;
                Bar {
                    x,
                    w,
                    claimed_h: height(c),
                    claimed_y: HEIGHT - height(c),
                    used_h: height(u),
                    used_y: HEIGHT - height(u),
                    label: format!("{}: {c} claimed, {u} used", instant(&h["hour"])),
                }
            })
            .collect();
        Chart {
            bars,
            max,
            first: instant(&hours[0]["hour"]),
            last: instant(&hours[hours.len() - 1]["hour"]),
            total_claimed: hours.iter().map(|h| n(h, "claimed")).sum(),
            total_used: hours.iter().map(|h| n(h, "used")).sum(),
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

    #[test]
    fn bars_scale_to_the_busiest_hour() {
        let c = Chart::of(&json!([
            {"hour": "2026-11-24T10:00:00Z", "claimed": 10, "used": 5},
            {"hour": "2026-11-24T11:00:00Z", "claimed": 0, "used": 0},
        ]));
        assert_eq!((c.max, c.total_claimed, c.total_used), (10, 10, 5));
        assert_eq!(c.bars[0].claimed_h, HEIGHT - 10);
        assert_eq!(c.bars[0].used_h, (HEIGHT - 10) / 2);
        assert_eq!(c.bars[1].claimed_h, 0);
        assert!(Chart::of(&json!([])).is_empty());
    }
}
