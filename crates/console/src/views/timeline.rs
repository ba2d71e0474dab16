//! The home page's activity timeline: each activity's enrollment and run as bars on one time
//! axis (from a week ago to five weeks ahead), with today marked. Plain HTML and CSS: each
//! bar's position is a percentage of the axis, computed here.

use coupond_api::views::ActivityView;
use coupond_domain::Window;
use coupond_domain::{Timestamp, Zone};

/// How far back and ahead the axis reaches, in days.
const BACK_DAYS: i64 = 7;
const AHEAD_DAYS: i64 = 35;
const DAY_MICROS: i64 = 86_400_000_000;

/// A bar on the axis: left edge and width, in percent of the axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bar {
    pub left: f64,
    pub width: f64,
}

/// One activity on the timeline.
#[derive(Debug, Clone)]
pub struct Lane {
    pub id: i64,
    pub title: String,
    pub status: String,
    pub enrollment: Option<Bar>,
    pub run: Option<Bar>,
}

/// The axis with its lanes and tick labels.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    pub lanes: Vec<Lane>,
    /// Today, in percent of the axis.
    pub now: f64,
    /// Week ticks: (percent, the local date in the platform's time zone, `YYYY-MM-DD`).
    pub ticks: Vec<(f64, String)>,
}

impl Timeline {
    /// The activities that overlap the axis at `now`, in the order given; ticks named by
    /// their dates in `zone`.
    pub fn of(activities: &[ActivityView], now: Timestamp, zone: Zone) -> Self {
        let from = now.unix_micros() - BACK_DAYS * DAY_MICROS;
        let to = now.unix_micros() + AHEAD_DAYS * DAY_MICROS;
        let span = (to - from) as f64;
        let bar = |w: &Window| -> Option<Bar> {
            let (s, e) = (w.start.unix_micros().max(from), w.end.unix_micros().min(to));
            (s < e).then(|| Bar {
                left: (s - from) as f64 * 100.0 / span,
                width: ((e - s) as f64 * 100.0 / span).max(0.5),
            })
        };
        let lanes = activities
            .iter()
            .filter_map(|a| {
                let (enrollment, run) = (bar(&a.terms.enrollment), bar(&a.terms.run));
                (enrollment.is_some() || run.is_some()).then(|| Lane {
                    id: a.id.get(),
                    title: a.terms.title.clone(),
                    status: a.status.as_str().to_owned(),
                    enrollment,
                    run,
                })
            })
            .collect();
        let ticks = (0..=(BACK_DAYS + AHEAD_DAYS) / 7)
            .map(|week| {
                let at = from + week * 7 * DAY_MICROS;
                let label = Timestamp::from_unix_micros(at)
                    .map(|t| zone.date_text(t))
                    .unwrap_or_default();
                ((at - from) as f64 * 100.0 / span, label)
            })
            // A label at the right edge would stick out of the card.
            .filter(|(x, _)| *x < 95.0)
            .collect();
        Timeline {
            lanes,
            now: BACK_DAYS as f64 * 100.0 / (BACK_DAYS + AHEAD_DAYS) as f64,
            ticks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bars_sit_where_their_windows_are_and_are_clipped_to_the_axis() {
        let now = Timestamp::parse("2026-11-24T00:00:00Z").unwrap();
        // As the API answers them.
        let view = |v: serde_json::Value| -> ActivityView {
            let mut full = json!({"cities": [1], "kind": "amount_off", "value_min": 1,
                "value_max": 2, "frozen_at": "2026-11-24T00:00:00Z",
                "created_at": "2025-01-01T00:00:00Z", "updated_at": "2025-01-01T00:00:00Z"});
            for (k, x) in v.as_object().unwrap() {
                full[k] = x.clone();
            }
            serde_json::from_value(full).unwrap()
        };
        let a = view(json!({"id": 1, "title": "A", "status": "enrolling",
            "enrollment": {"start": "2026-11-17T00:00:00Z", "end": "2026-11-24T00:00:00Z"},
            "run": {"start": "2026-11-24T00:00:00Z", "end": "2027-06-01T00:00:00Z"}}));
        let gone = view(json!({"id": 2, "title": "Old", "status": "ended",
            "enrollment": {"start": "2025-01-01T00:00:00Z", "end": "2025-01-02T00:00:00Z"},
            "run": {"start": "2025-01-02T00:00:00Z", "end": "2025-02-01T00:00:00Z"}}));
        let t = Timeline::of(&[a, gone], now, Zone::UTC);
        assert_eq!(t.lanes.len(), 1, "an activity off the axis has no lane");
        let lane = &t.lanes[0];
        let e = lane.enrollment.unwrap();
        assert!(
            e.left.abs() < 1e-9 && (e.width - t.now).abs() < 1e-9,
            "{e:?}"
        );
        let r = lane.run.unwrap();
        assert!((r.left - t.now).abs() < 1e-9 && (r.left + r.width - 100.0).abs() < 1e-9);
        assert_eq!(t.ticks.first().map(|x| x.1.as_str()), Some("2026-11-17"));
        // In Los Angeles the first tick (2026-11-17T00:00Z) is 16:00 on the 16th.
        let la = Zone::parse("America/Los_Angeles").unwrap();
        let t = Timeline::of(&[], now, la);
        assert_eq!(t.ticks.first().map(|x| x.1.as_str()), Some("2026-11-16"));
    }
}
