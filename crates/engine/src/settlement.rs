//! The settlement of a period: what the platform owes each merchant for the share of its
//! templates' discounts that activities' splits put on the platform, refunds netted.
//!
//! Built from the [`Reconciliation`](crate::reports::Reconciliation) of the same period, line
//! for line, so the two always agree: the merchants' settlements sum to the platform's net
//! share of the reconciliation's merchant templates, to the minor unit (the rounding rule is
//! [`coupond_domain::funding`]'s, applied once per line).

use coupond_domain::{MerchantId, Timestamp};

use crate::reports::{Reconciliation, ReconciliationRow};

/// One merchant's settlement: its lines the platform pays some part of, and the sum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MerchantSettlement {
    pub merchant_id: MerchantId,
    pub lines: Vec<ReconciliationRow>,
    /// The platform's part of the discount given in the period.
    pub platform_given: i64,
    /// The platform's part of the discount refunded in the period.
    pub platform_refunded: i64,
}

impl MerchantSettlement {
    /// What the platform owes the merchant: its part given less its part refunded.
    pub fn owed(&self) -> i64 {
        self.platform_given - self.platform_refunded
    }
}

/// Every merchant's settlement of `[from, to)`, by merchant id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settlement {
    pub from: Timestamp,
    pub to: Timestamp,
    pub merchants: Vec<MerchantSettlement>,
}

impl Settlement {
    /// The settlement the reconciliation `r` implies, for `only` one merchant if asked. A
    /// merchant with nothing owed in the period (no line the platform funds) is left out.
    pub fn of(r: &Reconciliation, only: Option<MerchantId>) -> Self {
        let mut merchants: Vec<MerchantSettlement> = Vec::new();
        let mut rows: Vec<&ReconciliationRow> = r
            .rows
            .iter()
            .filter(|x| x.funding.platform_bps() > 0)
            .filter(|x| x.merchant_id.is_some() && (only.is_none() || x.merchant_id == only))
            .collect();
        rows.sort_by_key(|x| (x.merchant_id, x.template_id));
        for x in rows {
            let Some(m) = x.merchant_id else { continue };
            if merchants.last().map(|s| s.merchant_id) != Some(m) {
                merchants.push(MerchantSettlement {
                    merchant_id: m,
                    lines: Vec::new(),
                    platform_given: 0,
                    platform_refunded: 0,
                });
            }
            if let Some(s) = merchants.last_mut() {
                s.platform_given += x.given().platform;
                s.platform_refunded += x.refunded().platform;
                s.lines.push(x.clone());
            }
        }
        Settlement {
            from: r.from,
            to: r.to,
            merchants,
        }
    }

    /// What the platform owes every merchant in the settlement.
    pub fn total_owed(&self) -> i64 {
        self.merchants.iter().map(MerchantSettlement::owed).sum()
    }
}

#[cfg(test)]
mod tests {
    use coupond_domain::{Funding, MerchantId, Money, Split, TemplateId};

    use crate::reports::ReconciliationRow;

    fn row(amounts: Vec<(i64, i64, i64)>) -> ReconciliationRow {
        let sum = |f: fn(&(i64, i64, i64)) -> i64| amounts.iter().map(f).sum::<i64>();
        ReconciliationRow {
            template_id: TemplateId::new(1).unwrap(),
            title: "t".into(),
            merchant_id: Some(MerchantId::new(1).unwrap()),
            activity_id: None,
            funding: Funding::platform_share(5000).unwrap(),
            coupons_used: sum(|a| a.1),
            discount: Money::new(sum(|a| a.0 * a.1)).unwrap(),
            coupons_refunded: sum(|a| a.2),
            refunded_discount: Money::new(sum(|a| a.0 * a.2)).unwrap(),
            amounts,
        }
    }

    /// Two uses of 0.05 at 50 %: 0.03 + 0.03 for the platform (each rounded half away from
    /// zero), 0.02 + 0.02 for the merchant. One refunded next period takes back 0.03 and 0.02:
    /// what is left is one use's split, as if the refunded one never happened.
    #[test]
    fn a_refund_in_another_period_takes_back_exactly_what_its_use_gave() {
        let january = row(vec![(5, 2, 0)]);
        let february = row(vec![(5, 0, 1)]);
        assert_eq!(
            january.given(),
            Split {
                platform: 6,
                merchant: 4
            }
        );
        assert_eq!(
            february.refunded(),
            Split {
                platform: 3,
                merchant: 2
            }
        );
        let net = january.net() + february.net();
        assert_eq!(
            net,
            Split {
                platform: 3,
                merchant: 2
            }
        );
        assert_eq!(net.total(), 5);
    }
}
