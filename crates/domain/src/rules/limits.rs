//! Limits on how often one user uses a template's coupons per local day, week or month.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::{DomainError, Findings};
use crate::time::Timestamp;
use crate::zone::Zone;

/// Most uses a limit allows.
pub const MAX_USES: u32 = 1000;

/// A calendar period in the platform's time zone; a week begins on Monday.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Period {
    Day,
    Week,
    Month,
}

impl Period {
    pub fn as_str(self) -> &'static str {
        match self {
            Period::Day => "day",
            Period::Week => "week",
            Period::Month => "month",
        }
    }

    /// The first instant of the local period `now` falls in.
    pub fn start(self, now: Timestamp, zone: Zone) -> Option<Timestamp> {
        let day = zone.day_of(now);
        let first = match self {
            Period::Day => day,
            // Local day 0 (1970-01-01) was a Thursday: Monday is 3 days before.
            Period::Week => day - (day + 3).rem_euclid(7),
            Period::Month => Zone::month_first_day(day)?,
        };
        zone.day_start(first)
    }
}

/// At most `max` of the template's coupons used (or held by a lock) by one user per `period`:
/// a lock that would pass it is refused with `use_limit_reached`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UseLimit {
    pub period: Period,
    /// 1 to 1000.
    #[schema(example = 1)]
    pub max: u32,
}

impl UseLimit {
    /// Whether `used` uses in the period, and `more` in this order, stay within it.
    pub fn allows(&self, used: u64, more: u64) -> bool {
        used.saturating_add(more) <= u64::from(self.max)
    }

    /// A template's limits: at most one per period, each `max` from 1 to [`MAX_USES`].
    pub fn validate(limits: &[UseLimit]) -> Result<(), DomainError> {
        let mut found = Findings::default();
        for (i, l) in limits.iter().enumerate() {
            if l.max < 1 || l.max > MAX_USES {
                found.check::<()>(Err(DomainError::invalid(
                    &format!("use_limits[{i}].max"),
                    "invalid_value",
                    format!("max must be from 1 to {MAX_USES}"),
                )));
            }
            if limits[..i].iter().any(|o| o.period == l.period) {
                found.check::<()>(Err(DomainError::invalid(
                    &format!("use_limits[{i}].period"),
                    "duplicate",
                    format!("one limit per period; {} is given twice", l.period.as_str()),
                )));
            }
        }
        found.done()
    }
}
