//! Reports computed from the store for every front door: the reconciliation of discounts given
//! in a period, per template and per funder, and its CSV.

use std::collections::BTreeMap;

use coupond_domain::{
    ActivityId, CsvWriter, FundedBy, MerchantId, Money, Template, TemplateId, Timestamp,
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
    /// Who pays: the activity's funder, else the template's owner (the platform for its own).
    pub funded_by: FundedBy,
    pub coupons_used: i64,
    pub discount: Money,
    pub coupons_refunded: i64,
    pub refunded_discount: Money,
}

impl ReconciliationRow {
    /// What the period costs its funder: the discount given less the discount refunded.
    pub fn net_discount(&self) -> i64 {
        self.discount.minor() - self.refunded_discount.minor()
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
    fn add(&mut self, u: &UsageRow) {
        self.coupons_used += u.used;
        self.discount += u.discount;
        self.coupons_refunded += u.refunded;
        self.refunded_discount += u.refunded_discount;
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
    let mut funders: BTreeMap<ActivityId, FundedBy> = BTreeMap::new();
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
        let funded_by = match t.spec.activity_id {
            Some(a) => match funders.get(&a) {
                Some(f) => *f,
                None => {
                    let f = store.activity(a).await?.spec.funded_by;
                    funders.insert(a, f);
                    f
                }
            },
            None if t.merchant_id.is_some() => FundedBy::Merchant,
            None => FundedBy::Platform,
        };
        match funded_by {
            FundedBy::Platform => report.platform.add(&u),
            FundedBy::Merchant => report.merchants.add(&u),
        }
        report.total.add(&u);
        report.rows.push(ReconciliationRow {
            template_id: t.id,
            title: t.spec.title.clone(),
            merchant_id: t.merchant_id,
            activity_id: t.spec.activity_id,
            funded_by,
            coupons_used: u.used,
            discount: Money::new(u.discount).map_err(StoreError::other)?,
            coupons_refunded: u.refunded,
            refunded_discount: Money::new(u.refunded_discount).map_err(StoreError::other)?,
        });
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
            "coupons_used",
            "discount",
            "coupons_refunded",
            "refunded_discount",
            "net_discount",
        ]);
        for r in &self.rows {
            w.number(r.template_id.get())
                .text(&r.title)
                .optional_number(r.merchant_id.map(MerchantId::get))
                .optional_number(r.activity_id.map(ActivityId::get))
                .text(r.funded_by.as_str())
                .number(r.coupons_used)
                .number(r.discount.minor())
                .number(r.coupons_refunded)
                .number(r.refunded_discount.minor())
                .number(r.net_discount())
                .end_line();
        }
        w.finish()
    }
}
