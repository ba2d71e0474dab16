//! Who pays an activity's discounts: a split between the platform and the merchant.
//!
//! [`Funding`] is the platform's share in basis points (0: each merchant pays its own
//! templates' discounts; 10,000: the platform pays all; 6,000: the platform 60 %, the
//! merchant 40 %). Standalone templates are their merchant's, the platform's own are the
//! platform's.
//!
//! **Rounding.** Each coupon's discount is split on its own: the platform's part is
//! `discount × bps / 10,000` rounded half away from zero, the merchant's the rest, so the
//! parts always sum to the whole, to the minor unit. A refund takes back exactly the parts its
//! coupon's use gave, whatever period each falls in, so a refunded use nets to zero for both
//! and settlements of consecutive periods add up to the settlement of the whole.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::activity::FundedBy;
use crate::error::DomainError;
use crate::money::BasisPoints;

/// The platform's share of each discount given in an activity, in basis points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Funding {
    /// 0 to 10000: the platform pays this share of each discount, the merchant the rest.
    #[schema(value_type = i64, example = 6000)]
    platform_bps: BasisPoints,
}

impl Default for Funding {
    /// The merchant pays all: today's `funded_by: merchant`.
    fn default() -> Self {
        Funding::MERCHANT
    }
}

/// An amount split between the platform and a merchant; the parts sum to the whole.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct Split {
    pub platform: i64,
    pub merchant: i64,
}

impl Split {
    pub fn total(self) -> i64 {
        self.platform + self.merchant
    }
}

impl std::ops::Sub for Split {
    type Output = Split;
    fn sub(self, o: Split) -> Split {
        Split {
            platform: self.platform - o.platform,
            merchant: self.merchant - o.merchant,
        }
    }
}

impl std::ops::Add for Split {
    type Output = Split;
    fn add(self, o: Split) -> Split {
        Split {
            platform: self.platform + o.platform,
            merchant: self.merchant + o.merchant,
        }
    }
}

impl std::ops::AddAssign for Split {
    fn add_assign(&mut self, o: Split) {
        self.platform += o.platform;
        self.merchant += o.merchant;
    }
}

impl Funding {
    /// The merchant pays every discount.
    pub const MERCHANT: Funding = Funding {
        platform_bps: BasisPoints::ZERO,
    };
    /// The platform pays every discount.
    pub const PLATFORM: Funding = Funding {
        platform_bps: BasisPoints::FULL,
    };

    /// The platform pays `bps` of 10,000 (422 `invalid_value` on `funding.platform_bps` if
    /// outside 0 to 10,000).
    pub fn platform_share(bps: i64) -> Result<Self, DomainError> {
        BasisPoints::new(bps)
            .map(|platform_bps| Funding { platform_bps })
            .map_err(|m| DomainError::invalid("funding.platform_bps", "invalid_value", m))
    }

    pub fn platform_bps(self) -> u16 {
        self.platform_bps.get()
    }

    /// `amount` split by the rule in the module's notes.
    pub fn split(self, amount: i64) -> Split {
        let bps = i128::from(self.platform_bps.get());
        let a = i128::from(amount);
        let half = a.signum() * 5_000;
        // |a × bps| ≤ 2⁶³ × 10⁴ fits i128; the result is at most |amount|, so it fits i64.
        let platform = ((a * bps + half) / 10_000) as i64;
        Split {
            platform,
            merchant: amount - platform,
        }
    }

    /// The old all-or-nothing choice as a split.
    pub fn of(f: FundedBy) -> Self {
        match f {
            FundedBy::Platform => Funding::PLATFORM,
            FundedBy::Merchant => Funding::MERCHANT,
        }
    }

    /// The old field saying the same, where the split is all or nothing.
    pub fn as_funded_by(self) -> Option<FundedBy> {
        match self.platform_bps.get() {
            10_000 => Some(FundedBy::Platform),
            0 => Some(FundedBy::Merchant),
            _ => None,
        }
    }

    /// Who pays most, for readers of the old field: `platform` at 10,000, else `merchant`
    /// when the merchant pays all, else `shared`.
    pub fn label(self) -> &'static str {
        match self.platform_bps.get() {
            10_000 => "platform",
            0 => "merchant",
            _ => "shared",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn f(bps: i64) -> Funding {
        Funding::platform_share(bps).unwrap()
    }

    #[test]
    fn sixty_forty_rounds_half_away_from_zero() {
        assert_eq!(
            f(6000).split(1_000),
            Split {
                platform: 600,
                merchant: 400
            }
        );
        // 333 × 0.6 = 199.8 → 200; 5 × 0.5 = 2.5 → 3; -5 × 0.5 = -2.5 → -3.
        assert_eq!(
            f(6000).split(333),
            Split {
                platform: 200,
                merchant: 133
            }
        );
        assert_eq!(
            f(5000).split(5),
            Split {
                platform: 3,
                merchant: 2
            }
        );
        assert_eq!(
            f(5000).split(-5),
            Split {
                platform: -3,
                merchant: -2
            }
        );
        assert_eq!(Funding::PLATFORM.split(777).merchant, 0);
        assert_eq!(Funding::MERCHANT.split(777).platform, 0);
    }

    #[test]
    fn out_of_range_names_the_field() {
        let e = Funding::platform_share(10_001).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("funding.platform_bps"));
        assert!(Funding::platform_share(-1).is_err());
        let parsed: Result<Funding, _> = serde_json::from_str(r#"{"platform_bps": 6000, "x": 1}"#);
        assert!(parsed.is_err(), "unknown fields are refused");
        let parsed: Funding = serde_json::from_str(r#"{"platform_bps": 6000}"#).unwrap();
        assert_eq!(parsed.platform_bps(), 6000);
    }

    proptest! {
        #[test]
        fn parts_sum_to_the_whole(bps in 0i64..=10_000, amount in -1_000_000_000_000i64..1_000_000_000_000) {
            let s = f(bps).split(amount);
            prop_assert_eq!(s.total(), amount);
            prop_assert!(s.platform.abs() <= amount.abs());
            prop_assert!(s.platform.signum() * amount.signum() >= 0);
        }
    }
}
