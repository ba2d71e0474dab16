//! Figures of templates and activities (each caller its own), and the platform's
//! reconciliation of the discounts given in a period; the performance report and the
//! settlement in their own modules.

pub mod performance;
pub mod settlement;

use std::collections::BTreeMap;

use coupond_domain::{
    ActivityId, Area, Funding, MerchantId, Money, Template, TemplateId, TemplateStatus, Timestamp,
    Zone,
};
use coupond_engine::reports;
use coupond_engine::stats::{SlotUnit, StatsWindow};
use coupond_store::{CouponCounts, HourCounts};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::caller::{roles, Access, Principal, CAMPAIGN_READ};
use crate::context::App;
use crate::error::{AppError, AppResult};

/// Who may read a template's or an activity's figures: the platform, and a merchant those of
/// its own templates.
pub const FIGURES: Access = CAMPAIGN_READ;

/// The longest period a settlement or performance report covers, in days.
pub const MAX_PERIOD_DAYS: i64 = 366;

/// `[from, to)` checked: `to` after `from`, at most [`MAX_PERIOD_DAYS`] later.
pub fn check_period(from: Timestamp, to: Timestamp) -> AppResult<()> {
    if from >= to {
        return Err(AppError::bad_query("to", "to must be after from"));
    }
    if to.unix_micros() - from.unix_micros() > MAX_PERIOD_DAYS * 86_400_000_000 {
        let why = format!("a report covers at most {MAX_PERIOD_DAYS} days");
        return Err(AppError::bad_query("to", why));
    }
    Ok(())
}

/// Who may read the reconciliation: the platform.
pub const RECONCILIATION: Access = Access {
    roles: roles::PLATFORM,
    area: Area::Read,
};

/// Hours of per-hour counts, at most.
const MAX_HOURS: u32 = 24 * 90;
/// Days of per-day counts, at most.
const MAX_DAYS: u32 = 90;

/// Coupons created and used in one hour.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct HourCount {
    /// The hour's first instant.
    pub hour: Timestamp,
    /// Coupons claimed or issued in it.
    pub claimed: i64,
    /// Uses in it (confirmed orders), refunded since or not.
    pub used: i64,
    /// The discount of the uses in it (minor units), refunded since or not.
    pub discount: i64,
    /// Of the uses in it, those refunded since.
    #[serde(default)]
    pub refunded: i64,
    /// The discount those refunds took back (minor units).
    #[serde(default)]
    pub refunded_discount: i64,
}

/// Coupons created and used in one local day of the platform's time zone
/// (`platform.time_zone`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct DayCount {
    /// The day's first instant: local midnight in the platform's time zone, as UTC.
    pub day: Timestamp,
    /// The day's local date (`YYYY-MM-DD`).
    #[serde(default)]
    pub date: String,
    /// Coupons claimed or issued in it.
    pub claimed: i64,
    /// Uses in it (confirmed orders), refunded since or not.
    pub used: i64,
    /// The discount of the uses in it (minor units), refunded since or not.
    pub discount: i64,
    /// Of the uses in it, those refunded since.
    pub refunded: i64,
    /// The discount those refunds took back (minor units).
    pub refunded_discount: i64,
}

/// A template's numbers now. They reconcile: `issued = unused + locked + used + expired +
/// revoked`, each use ever made is `used` now or was `refunded`, and `discount_given` is
/// what the uses gave less `discount_refunded`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TemplateStats {
    pub template_id: TemplateId,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merchant_id: Option<MerchantId>,
    pub status: TemplateStatus,
    pub stock: i64,
    /// Coupons issued in all (claims, codes and bulk issuance), as counted against the stock.
    pub claimed: i64,
    /// The same coupons counted by their status now: `unused + locked + used + expired +
    /// revoked`, so no status count is above it.
    pub issued: i64,
    /// Of those, issued by bulk issuance jobs.
    pub issued_in_bulk: i64,
    pub unused: i64,
    pub locked: i64,
    /// Used now (a refunded use is no longer counted here: see `refunded`).
    pub used: i64,
    pub expired: i64,
    pub revoked: i64,
    /// Refunds of its uses: each gave its coupon back (or voided it, by the refund policy).
    pub refunded: i64,
    /// Discount given by used coupons, less what refunds took back.
    pub discount_given: Money,
    /// The discount refunds took back.
    pub discount_refunded: Money,
    /// Discount held by locks not confirmed yet.
    pub discount_reserved: Money,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<Money>,
    /// Every hour of the window asked for (`hours`), oldest first, the last being the current
    /// hour, hours without claims or uses as zeros; empty when `days` was asked for.
    #[serde(default)]
    pub per_hour: Vec<HourCount>,
    /// Every local day (the platform's time zone) of the window asked for (`days`), oldest
    /// first, the last being today, as `per_hour`; absent when `hours` was asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_day: Vec<DayCount>,
}

impl TemplateStats {
    fn new(t: &Template, c: CouponCounts, window: &StatsWindow, now: Timestamp) -> Self {
        let slots = window.slots(&c.per_hour);
        let (per_hour, per_day) = match window.unit {
            SlotUnit::Hour => (slots.iter().map(HourCount::of).collect(), vec![]),
            SlotUnit::Day => (
                vec![],
                slots.iter().map(|h| DayCount::of(h, window.zone)).collect(),
            ),
        };
        TemplateStats {
            template_id: t.id,
            title: t.spec.title.clone(),
            merchant_id: t.merchant_id,
            status: t.status(now),
            stock: t.spec.total_stock,
            claimed: t.claimed,
            issued: c.issued(),
            issued_in_bulk: c.in_bulk,
            unused: c.unused,
            locked: c.locked,
            used: c.used,
            expired: c.expired,
            revoked: c.revoked,
            refunded: c.refunded,
            discount_given: t.given,
            discount_refunded: Money::new(c.refunded_discount).unwrap_or(Money::ZERO),
            discount_reserved: t.reserved,
            budget: t.spec.budget,
            per_hour,
            per_day,
        }
    }
}

impl HourCount {
    fn of(h: &HourCounts) -> Self {
        HourCount {
            hour: h.hour,
            claimed: h.created,
            used: h.used,
            discount: h.discount,
            refunded: h.refunded,
            refunded_discount: h.refunded_discount,
        }
    }
}

impl DayCount {
    fn of(h: &HourCounts, zone: Zone) -> Self {
        DayCount {
            day: h.hour,
            date: zone.date_text(h.hour),
            claimed: h.created,
            used: h.used,
            discount: h.discount,
            refunded: h.refunded,
            refunded_discount: h.refunded_discount,
        }
    }
}

/// How far back the per-hour or per-day counts go.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct StatsQuery {
    /// Hours of per-hour counts ending with the current one, 1..=2160 (default 168).
    pub hours: Option<u32>,
    /// Instead of `hours`: days of per-day counts ending with today, 1..=90 (local days of
    /// the platform's time zone).
    pub days: Option<u32>,
}

/// The window `q` asks for, ending now.
fn window(q: &StatsQuery, now: Timestamp, zone: Zone) -> AppResult<StatsWindow> {
    let (unit, count, max, field) = match (q.hours, q.days) {
        (Some(_), Some(_)) => {
            return Err(AppError::bad_query("days", "give hours or days, not both"))
        }
        (_, Some(d)) => (SlotUnit::Day, d, MAX_DAYS, "days"),
        (h, None) => (SlotUnit::Hour, h.unwrap_or(168), MAX_HOURS, "hours"),
    };
    if count == 0 || count > max {
        let why = format!("{field} must be from 1 to {max}");
        return Err(AppError::bad_query(field, why));
    }
    Ok(StatsWindow::in_zone(now, unit, count, zone))
}

/// One merchant's part of an activity.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct MerchantRow {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merchant_id: Option<MerchantId>,
    pub templates: i64,
    pub stock: i64,
    pub claimed: i64,
    /// Used now (refunded uses are in `refunded`).
    pub used: i64,
    pub refunded: i64,
    /// Less what refunds took back (`discount_refunded`).
    pub discount_given: i64,
    pub discount_refunded: i64,
}

/// An activity's numbers.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ActivityStats {
    pub activity_id: ActivityId,
    pub title: String,
    /// Who funds its discounts: `platform`, `merchant` or `shared` (see `funding`).
    pub funded_by: String,
    /// The platform's share of each discount.
    pub funding: Funding,
    /// All its templates (a merchant's view: its own only).
    pub totals: MerchantRow,
    /// Per merchant (the platform's own templates without `merchant_id`).
    pub merchants: Vec<MerchantRow>,
    pub templates: Vec<TemplateStats>,
}

/// One template's line of the reconciliation.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ReconciliationRow {
    pub template_id: TemplateId,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merchant_id: Option<MerchantId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activity_id: Option<ActivityId>,
    /// Who pays for the discount: `platform`, `merchant` or `shared` between them (see
    /// `funding`): the activity's split, else the template's owner (the platform for its own).
    pub funded_by: String,
    pub funding: Funding,
    /// Coupons used (confirmed) in the period, refunded since or not.
    pub coupons_used: i64,
    /// Their discount.
    pub discount: Money,
    /// Coupons refunded in the period, whenever they were used.
    pub coupons_refunded: i64,
    /// The discount those refunds took back.
    pub refunded_discount: Money,
    /// `discount - refunded_discount`: what the period costs the funders.
    pub net_discount: i64,
    /// The platform's part of `net_discount` (each coupon's discount split on its own, rounded
    /// half away from zero; the merchant's part is the rest).
    pub platform_net: i64,
    /// The merchant's part of `net_discount`.
    pub merchant_net: i64,
}

/// Totals of one funder: the uses and refunds of the lines it pays some part of, and its part
/// of their amounts.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct FunderTotal {
    pub coupons_used: i64,
    pub discount: i64,
    pub coupons_refunded: i64,
    pub refunded_discount: i64,
    pub net_discount: i64,
}

/// Coupons used and discount given in a period, per template and per funder.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Reconciliation {
    pub from: Timestamp,
    pub to: Timestamp,
    pub rows: Vec<ReconciliationRow>,
    pub platform: FunderTotal,
    pub merchants: FunderTotal,
    pub total: FunderTotal,
}

impl From<reports::FunderTotal> for FunderTotal {
    fn from(t: reports::FunderTotal) -> Self {
        FunderTotal {
            coupons_used: t.coupons_used,
            discount: t.discount,
            coupons_refunded: t.coupons_refunded,
            refunded_discount: t.refunded_discount,
            net_discount: t.net_discount(),
        }
    }
}

impl From<reports::Reconciliation> for Reconciliation {
    fn from(r: reports::Reconciliation) -> Self {
        let row = |r: reports::ReconciliationRow| ReconciliationRow {
            net_discount: r.net_discount(),
            platform_net: r.net().platform,
            merchant_net: r.net().merchant,
            template_id: r.template_id,
            title: r.title,
            merchant_id: r.merchant_id,
            activity_id: r.activity_id,
            funded_by: r.funding.label().to_owned(),
            funding: r.funding,
            coupons_used: r.coupons_used,
            discount: r.discount,
            coupons_refunded: r.coupons_refunded,
            refunded_discount: r.refunded_discount,
        };
        Reconciliation {
            from: r.from,
            to: r.to,
            rows: r.rows.into_iter().map(row).collect(),
            platform: r.platform.into(),
            merchants: r.merchants.into(),
            total: r.total.into(),
        }
    }
}

impl App {
    /// Figures over `templates` as of now, per hour or day of the window `q` asks for.
    async fn stats_of(
        &self,
        templates: &[Template],
        q: &StatsQuery,
    ) -> AppResult<Vec<TemplateStats>> {
        let now = self.now();
        let window = window(q, now, self.zone())?;
        let ids: Vec<TemplateId> = templates.iter().map(|t| t.id).collect();
        let counts = self.store().coupon_counts(&ids, now, window.start).await?;
        let stats = |(t, (_, c))| TemplateStats::new(t, c, &window, now);
        Ok(templates.iter().zip(counts).map(stats).collect())
    }

    /// Template `id`'s figures, if `p` may see it.
    pub async fn template_stats(
        &self,
        p: &Principal,
        id: TemplateId,
        q: &StatsQuery,
    ) -> AppResult<TemplateStats> {
        let t = self.visible_template(p, id).await?;
        let mut all = self.stats_of(std::slice::from_ref(&t), q).await?;
        all.pop().ok_or(AppError::NotFound)
    }

    /// Activity `id`'s figures: totals, a row per merchant and each template (a merchant's:
    /// its own templates only, and the activity only if it has one there).
    pub async fn activity_stats(
        &self,
        p: &Principal,
        id: ActivityId,
        q: &StatsQuery,
    ) -> AppResult<ActivityStats> {
        let a = self.store().activity(id).await?;
        let mut templates = self.store().activity_templates(id).await?;
        if let Some(m) = p.merchant() {
            templates.retain(|t| t.merchant_id == Some(m));
            if templates.is_empty() {
                return Err(AppError::NotFound);
            }
        }
        let stats = self.stats_of(&templates, q).await?;
        let (totals, merchants) = per_merchant(&stats);
        Ok(ActivityStats {
            activity_id: a.id,
            title: a.spec.title.clone(),
            funded_by: a.spec.funding().label().to_owned(),
            funding: a.spec.funding(),
            totals,
            merchants,
            templates: stats,
        })
    }

    /// The reconciliation of `[from, to)`: per template and per funder, the uses and refunds
    /// made in it.
    pub async fn reconciliation(
        &self,
        from: Timestamp,
        to: Timestamp,
    ) -> AppResult<reports::Reconciliation> {
        if from >= to {
            return Err(AppError::bad_query("to", "to must be after from"));
        }
        Ok(reports::reconciliation(self.store(), from, to).await?)
    }
}

/// The totals of `stats`, and a row per merchant (the platform's own templates without one).
fn per_merchant(stats: &[TemplateStats]) -> (MerchantRow, Vec<MerchantRow>) {
    let mut by_merchant: BTreeMap<Option<MerchantId>, MerchantRow> = BTreeMap::new();
    let mut totals = MerchantRow::default();
    for t in stats {
        let own = by_merchant
            .entry(t.merchant_id)
            .or_insert_with(|| MerchantRow {
                merchant_id: t.merchant_id,
                ..MerchantRow::default()
            });
        for row in [own, &mut totals] {
            row.templates += 1;
            row.stock += t.stock;
            row.claimed += t.claimed;
            row.used += t.used;
            row.refunded += t.refunded;
            row.discount_given += t.discount_given.minor();
            row.discount_refunded += t.discount_refunded.minor();
        }
    }
    (totals, by_merchant.into_values().collect())
}
