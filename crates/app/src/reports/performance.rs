//! The performance report as every front door shows it ([`PerformanceReport`]): the
//! engine's counts ([`coupond_engine::performance`]) with their rates, per local day and
//! channel, and as CSV.

use coupond_domain::{ActivityId, CsvWriter, MerchantId, TemplateId, Timestamp};
use coupond_engine::performance::{self, Performance, Scope, Totals};
use coupond_store::Baseline;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::check_period;
use crate::caller::Principal;
use crate::context::App;
use crate::error::{AppError, AppResult};

/// The funnel and its rates (basis points of the coupons that reached a holder, rounded
/// down; the refund rate of the uses; absent when there is nothing to divide by).
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct FunnelView {
    /// Issued by bulk issuance jobs (uploads, segments).
    pub issued: i64,
    /// Claimed by users or for them, or redeemed from codes.
    pub claimed: i64,
    pub locked: i64,
    pub used: i64,
    pub refunded: i64,
    /// Unused coupons whose validity ended in the period.
    pub expired_unused: i64,
    pub revoked: i64,
    /// Coupons that reached a holder: issued and claimed; what the rates but the refund rate
    /// are of.
    pub reached: i64,
    pub lock_rate_bps: Option<i64>,
    pub use_rate_bps: Option<i64>,
    pub refund_rate_bps: Option<i64>,
    pub expiry_rate_bps: Option<i64>,
    pub revoke_rate_bps: Option<i64>,
}

/// One line of figures; amounts in minor units of `currency`.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct FiguresView {
    pub funnel: FunnelView,
    /// The discount of the uses in the period, what refunds in it took back, and the net.
    pub discount: i64,
    pub refunded_discount: i64,
    pub net_discount: i64,
    /// Orders confirmed with a coupon (each once; in a channel's line, each using a coupon of
    /// that channel) and their value before discounts (GMV).
    pub orders: i64,
    pub gmv: i64,
    /// Orders whose last coupon was refunded in the period, and their value.
    pub orders_refunded: i64,
    pub refunded_gmv: i64,
    /// `gmv - refunded_gmv`.
    pub net_gmv: i64,
    /// GMV per order, rounded down.
    pub average_order_value: Option<i64>,
    /// Net GMV per unit of net discount, in hundredths (1234: 12.34 times).
    pub gmv_per_discount_x100: Option<i64>,
    /// The orders paid without a coupon (the report's `baseline_merchant_id`'s, or the
    /// platform's) in the same period: in the totals and days, not in channels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub without_coupon: Option<WithoutCouponView>,
}

/// Orders recorded as paid without a coupon (`POST /v1/orders/{order_id}/record`).
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct WithoutCouponView {
    pub orders: i64,
    /// Their value.
    pub gmv: i64,
    /// Their value per order, rounded down: set beside `average_order_value`.
    pub average_order_value: Option<i64>,
}

impl FiguresView {
    /// A total's or a day's line: with the orders without a coupon.
    fn with_baseline(t: &Totals) -> Self {
        FiguresView {
            without_coupon: Some(WithoutCouponView {
                orders: t.plain_orders,
                gmv: t.plain_value,
                average_order_value: t.average_order_value_without(),
            }),
            ..FiguresView::from(t)
        }
    }
}

impl From<&Totals> for FiguresView {
    fn from(t: &Totals) -> Self {
        let f = &t.funnel;
        let rate = Totals::rate_bps;
        FiguresView {
            funnel: FunnelView {
                issued: f.issued,
                claimed: f.claimed,
                locked: f.locked,
                used: f.used,
                refunded: f.refunded,
                expired_unused: f.expired_unused,
                revoked: f.revoked,
                reached: f.reached(),
                lock_rate_bps: rate(f.locked, f.reached()),
                use_rate_bps: rate(f.used, f.reached()),
                refund_rate_bps: rate(f.refunded, f.used),
                expiry_rate_bps: rate(f.expired_unused, f.reached()),
                revoke_rate_bps: rate(f.revoked, f.reached()),
            },
            discount: t.discount,
            refunded_discount: t.refunded_discount,
            net_discount: t.net_discount(),
            orders: t.orders,
            gmv: t.order_value,
            orders_refunded: t.orders_refunded,
            refunded_gmv: t.refunded_value,
            net_gmv: t.net_order_value(),
            average_order_value: t.average_order_value(),
            gmv_per_discount_x100: t.gmv_per_discount_x100(),
            without_coupon: None,
        }
    }
}

/// One local day's figures.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DayFigures {
    /// The local date in the platform's zone (`YYYY-MM-DD`).
    pub date: String,
    /// Its first instant (local midnight, as UTC).
    pub start: Timestamp,
    #[serde(flatten)]
    pub figures: FiguresView,
}

/// One channel's figures.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ChannelFigures {
    /// `direct`, `listing:<id>`, `code:<batch>` or `code:shared`, `issuance:<job>`,
    /// `service`, or `source:<label>` for claims that gave a `source`.
    pub channel: String,
    /// The channel's kind (the part before `:`).
    pub kind: String,
    #[serde(flatten)]
    pub figures: FiguresView,
}

/// The report.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PerformanceReport {
    /// `template`, `activity`, `merchant` or `platform`.
    pub scope: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template_id: Option<TemplateId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activity_id: Option<ActivityId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merchant_id: Option<MerchantId>,
    pub from: Timestamp,
    pub to: Timestamp,
    /// Whose local days `days` are (`platform.time_zone`).
    pub time_zone: String,
    /// The currency of every amount (`platform.currency`).
    pub currency: String,
    /// Templates counted.
    pub templates: usize,
    /// Whose orders without a coupon `without_coupon` counts: this merchant's (orders whose
    /// every line is its), for a merchant's report, a merchant's template or a merchant
    /// caller; absent, the platform's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_merchant_id: Option<MerchantId>,
    pub totals: FiguresView,
    pub days: Vec<DayFigures>,
    pub channels: Vec<ChannelFigures>,
}

impl App {
    /// How `scope`'s coupons performed in `[from, to)` (a merchant's: its own templates; any
    /// other is as if it did not exist).
    pub async fn performance(
        &self,
        p: &Principal,
        scope: Scope,
        (from, to): (Timestamp, Timestamp),
    ) -> AppResult<PerformanceReport> {
        check_period(from, to)?;
        let (only, now) = (p.merchant(), self.now());
        let covered = performance::covered(self.store(), scope, only, now).await?;
        if covered.templates.is_empty() && only.is_some() && !matches!(scope, Scope::Platform) {
            return Err(AppError::NotFound);
        }
        let asked = performance::Asked {
            scope,
            only,
            covered: &covered,
        };
        let zone = self.zone();
        let counted = performance::performance(self.store(), asked, (from, to), zone, now).await?;
        Ok(self.report_of(counted))
    }

    fn report_of(&self, r: Performance) -> PerformanceReport {
        let (scope, template_id, activity_id, merchant_id) = match r.scope {
            Scope::Template(t) => ("template", Some(t), None, None),
            Scope::Activity(a) => ("activity", None, Some(a), None),
            Scope::Merchant(m) => ("merchant", None, None, Some(m)),
            Scope::Platform => ("platform", None, None, None),
        };
        PerformanceReport {
            scope: scope.to_owned(),
            template_id,
            activity_id,
            merchant_id,
            from: r.from,
            to: r.to,
            time_zone: self.zone().name().to_owned(),
            currency: self.currency().to_string(),
            templates: r.templates,
            baseline_merchant_id: match r.baseline {
                Baseline::Platform => None,
                Baseline::Merchant(m) => Some(m),
            },
            totals: FiguresView::with_baseline(&r.totals),
            days: r
                .days
                .iter()
                .map(|d| DayFigures {
                    date: d.date.clone(),
                    start: d.start,
                    figures: FiguresView::with_baseline(&d.totals),
                })
                .collect(),
            channels: r
                .channels
                .iter()
                .map(|c| ChannelFigures {
                    channel: c.channel.clone(),
                    kind: c.kind.clone(),
                    figures: FiguresView::from(&c.totals),
                })
                .collect(),
        }
    }
}

impl PerformanceReport {
    /// One CSV line per total, day and channel: `line` says which, `key` names it.
    pub fn to_csv(&self) -> String {
        let r = self;
        let mut w = CsvWriter::with_header(&[
            "line",
            "key",
            "issued",
            "claimed",
            "locked",
            "used",
            "refunded",
            "expired_unused",
            "revoked",
            "discount",
            "refunded_discount",
            "net_discount",
            "orders",
            "gmv",
            "orders_refunded",
            "refunded_gmv",
            "net_gmv",
            "average_order_value",
            "gmv_per_discount_x100",
            "orders_without_coupon",
            "gmv_without_coupon",
            "average_order_value_without_coupon",
            "currency",
        ]);
        let lines = std::iter::once(("total", "", &r.totals))
            .chain(r.days.iter().map(|d| ("day", d.date.as_str(), &d.figures)))
            .chain(
                r.channels
                    .iter()
                    .map(|c| ("channel", c.channel.as_str(), &c.figures)),
            );
        for (line, key, f) in lines {
            let n = &f.funnel;
            w.text(line).text(key);
            for v in [
                n.issued,
                n.claimed,
                n.locked,
                n.used,
                n.refunded,
                n.expired_unused,
                n.revoked,
                f.discount,
                f.refunded_discount,
                f.net_discount,
                f.orders,
                f.gmv,
                f.orders_refunded,
                f.refunded_gmv,
                f.net_gmv,
            ] {
                w.number(v);
            }
            let plain = f.without_coupon.as_ref();
            w.optional_number(f.average_order_value)
                .optional_number(f.gmv_per_discount_x100)
                .optional_number(plain.map(|p| p.orders))
                .optional_number(plain.map(|p| p.gmv))
                .optional_number(plain.and_then(|p| p.average_order_value))
                .text(&r.currency)
                .end_line();
        }
        w.finish()
    }
}
