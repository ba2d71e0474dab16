//! Reports computed from the store for every front door: the reconciliation of discounts given
//! in a period, per template and per funder, and its CSV; the settlement (what the platform
//! owes each merchant for the discounts it funded) is in [`settlement`](crate::settlement).

use std::collections::BTreeMap;

use coupond_domain::{
    ActivityId, CsvWriter, Funding, MerchantId, Money, Split, Template, TemplateId, Timestamp,
};
use coupond_store::{Store, StoreError, StoreResult, UsageRow};

/// One template's line: the coupons used (confirmed) in the period and their discount, and
/// the refunds made in the period with the discount they took back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReconciliationRow {
    pub template_id: TemplateId,
    pub title: String,
    pub merchant_id: Option<MerchantId>,
    pub activity_id: Option<ActivityId>,
    /// Who pays: the activity's split, else the template's owner (the platform for its own).
    pub funding: Funding,
    pub coupons_used: i64,
    pub discount: Money,
    pub coupons_refunded: i64,
    pub refunded_discount: Money,
    /// Per discount amount: `(amount, uses, refunds)` (see [`UsageRow::amounts`]).
    pub amounts: Vec<(i64, i64, i64)>,
}

impl ReconciliationRow {
    /// What the period costs its funder: the discount given less the discount refunded.
    pub fn net_discount(&self) -> i64 {
        self.discount.minor() - self.refunded_discount.minor()
    }

    /// The discount given, split between the funders coupon by coupon.
    pub fn given(&self) -> Split {
        self.split_each(|(_, used, _)| used)
    }

    /// The discount refunded, each coupon's split as its use's was.
    pub fn refunded(&self) -> Split {
        self.split_each(|(_, _, refunded)| refunded)
    }

    /// Each amount's split times how many coupons `count` says.
    fn split_each(&self, count: impl Fn((i64, i64, i64)) -> i64) -> Split {
        let mut total = Split::default();
        for &a in &self.amounts {
            let one = self.funding.split(a.0);
            let n = count(a);
            total += Split {
                platform: one.platform * n,
                merchant: one.merchant * n,
            };
        }
        total
    }

    /// What the period costs each funder: given less refunded.
    pub fn net(&self) -> Split {
        self.given() - self.refunded()
    }
}

/// Totals of one funder (or of everyone).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FunderTotal {
    pub coupons_used: i64,
    pub discount: i64,
    pub coupons_refunded: i64,
    pub refunded_discount: i64,
}

impl FunderTotal {
    /// Adds a line's uses and refunds with `given` and `refunded`, this funder's part of them.
    fn add(&mut self, u: &UsageRow, given: i64, refunded: i64) {
        self.coupons_used += u.used;
        self.discount += given;
        self.coupons_refunded += u.refunded;
        self.refunded_discount += refunded;
    }

    /// The discount given less the discount refunded.
    pub fn net_discount(&self) -> i64 {
        self.discount - self.refunded_discount
    }
}

/// The reconciliation of `[from, to)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reconciliation {
    pub from: Timestamp,
    pub to: Timestamp,
    pub rows: Vec<ReconciliationRow>,
    pub platform: FunderTotal,
    pub merchants: FunderTotal,
    pub total: FunderTotal,
}

/// Per template and per funder, the coupons used in `[from, to)` and the discount they gave,
/// and the refunds made in it. A use counts in its period even if refunded later; the refund
/// counts in its own, so a past period's figures never change.
pub async fn reconciliation(
    store: &dyn Store,
    from: Timestamp,
    to: Timestamp,
) -> StoreResult<Reconciliation> {
    let usage = store.usage_between(from, to).await?;
    let ids: Vec<TemplateId> = usage.iter().map(|u| u.template_id).collect();
    let templates: BTreeMap<TemplateId, Template> = store
        .templates_by_ids(&ids)
        .await?
        .into_iter()
        .map(|t| (t.id, t))
        .collect();
    let mut funders: BTreeMap<ActivityId, Funding> = BTreeMap::new();
    let mut report = Reconciliation {
        from,
        to,
        rows: Vec::with_capacity(usage.len()),
        platform: FunderTotal::default(),
        merchants: FunderTotal::default(),
        total: FunderTotal::default(),
    };
    for u in usage {
        let t = templates.get(&u.template_id).ok_or(StoreError::NotFound)?;
        let funding = match t.spec.activity_id {
            Some(a) => match funders.get(&a) {
                Some(f) => *f,
                None => {
                    let f = store.activity(a).await?.spec.funding();
                    funders.insert(a, f);
                    f
                }
            },
            None if t.merchant_id.is_some() => Funding::MERCHANT,
            None => Funding::PLATFORM,
        };
        let row = ReconciliationRow {
            template_id: t.id,
            title: t.spec.title.clone(),
            merchant_id: t.merchant_id,
            activity_id: t.spec.activity_id,
            funding,
            coupons_used: u.used,
            discount: Money::new(u.discount).map_err(StoreError::other)?,
            coupons_refunded: u.refunded,
            refunded_discount: Money::new(u.refunded_discount).map_err(StoreError::other)?,
            amounts: u.amounts.clone(),
        };
        let (given, refunded) = (row.given(), row.refunded());
        // A funder's counts are the uses and refunds of the lines it pays some part of.
        if funding.platform_bps() > 0 {
            report.platform.add(&u, given.platform, refunded.platform);
        }
        if funding.platform_bps() < 10_000 {
            report.merchants.add(&u, given.merchant, refunded.merchant);
        }
        report.total.add(&u, u.discount, u.refunded_discount);
        report.rows.push(row);
    }
    Ok(report)
}

impl Reconciliation {
    /// The rows as CSV, with a header line; the title goes through [`coupond_domain::csv`],
    /// so a title written like a formula is text in a spreadsheet.
    pub fn to_csv(&self) -> String {
        let mut w = CsvWriter::with_header(&[
            "template_id",
            "title",
            "merchant_id",
            "activity_id",
            "funded_by",
            "platform_bps",
            "coupons_used",
            "discount",
            "coupons_refunded",
            "refunded_discount",
            "net_discount",
            "platform_net",
            "merchant_net",
        ]);
        for r in &self.rows {
            w.number(r.template_id.get())
                .text(&r.title)
                .optional_number(r.merchant_id.map(MerchantId::get))
                .optional_number(r.activity_id.map(ActivityId::get))
                .text(r.funding.label())
                .number(i64::from(r.funding.platform_bps()))
                .number(r.coupons_used)
                .number(r.discount.minor())
                .number(r.coupons_refunded)
                .number(r.refunded_discount.minor())
                .number(r.net_discount())
                .number(r.net().platform)
                .number(r.net().merchant)
                .end_line();
        }
        w.finish()
    }
}
