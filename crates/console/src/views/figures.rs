//! The campaign figures: the performance page (funnel, money, lines per day, the channel
//! table) of an activity, a template, a merchant or the platform, and the settlement (what
//! the platform owes each merchant). Both show the application's reports and offer their CSV.

use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use coupond_api::pagination::csv_answer;
use coupond_app::reports::{self, performance::FiguresView, performance::PerformanceReport};
use coupond_app::AppError;
use coupond_domain::{ActivityId, MerchantId, TemplateId, Timestamp};
use coupond_engine::performance::Scope;
use serde::Deserialize;

use super::activities::utc;
use super::format::{decimal, money, percent};
use super::names::MerchantNames;
use super::{attachment, problem_page, render, Shell};
use crate::problem::Problem;
use crate::session::Session;
use crate::Console;

/// Whose figures and over which period, as the page's form and links send them.
#[derive(Debug, Default, Deserialize)]
pub struct FiguresQuery {
    #[serde(default)]
    activity_id: Option<i64>,
    #[serde(default)]
    template_id: Option<i64>,
    #[serde(default)]
    merchant_id: Option<i64>,
    #[serde(default)]
    from: String,
    #[serde(default)]
    to: String,
    #[serde(default)]
    format: String,
}

impl FiguresQuery {
    /// The period asked for, or the last 30 days up to now (UTC, to the minute; the minute
    /// now is in included).
    fn period(&mut self, console: &Console) {
        if self.from.is_empty() || self.to.is_empty() {
            let now = console.app().now();
            let back = now.minus(time::Duration::days(30));
            let end = now.plus(time::Duration::minutes(1));
            self.from = back.to_string().chars().take(16).collect();
            self.to = end.to_string().chars().take(16).collect();
        }
    }

    /// `activity_id=..&` (whichever is named) for links and the API.
    fn scope(&self) -> String {
        let pairs = [
            ("activity_id", self.activity_id),
            ("template_id", self.template_id),
            ("merchant_id", self.merchant_id),
        ];
        pairs
            .iter()
            .filter_map(|(k, v)| v.map(|v| format!("{k}={v}&")))
            .collect()
    }

    /// The period as typed, checked (the application checks its length).
    fn instants(&self) -> Result<(Timestamp, Timestamp), Problem> {
        let at = |field: &str, text: &str| {
            Timestamp::parse(&utc(text))
                .map_err(|why| Problem::from(AppError::invalid("invalid_value", field, why)))
        };
        Ok((at("from", &self.from)?, at("to", &self.to)?))
    }

    /// The one scope named (none: the platform's, or a merchant's own).
    fn scope_asked(&self) -> Result<Scope, Problem> {
        let bad = |field: &str, why: String| {
            Problem::from(AppError::invalid("invalid_value", field, why))
        };
        match (self.template_id, self.activity_id, self.merchant_id) {
            (Some(t), None, None) => TemplateId::new(t)
                .map(Scope::Template)
                .map_err(|e| bad("template_id", e)),
            (None, Some(a), None) => ActivityId::new(a)
                .map(Scope::Activity)
                .map_err(|e| bad("activity_id", e)),
            (None, None, Some(m)) => MerchantId::new(m)
                .map(Scope::Merchant)
                .map_err(|e| bad("merchant_id", e)),
            (None, None, None) => Ok(Scope::Platform),
            _ => Err(bad(
                "template_id",
                "name at most one of template_id, activity_id and merchant_id".to_owned(),
            )),
        }
    }
}

/// One line of the page's tables, formatted.
#[derive(Debug, Clone)]
struct Line {
    name: String,
    claimed: i64,
    used: i64,
    refunded: i64,
    discount: String,
    orders: i64,
    gmv: String,
    net_gmv: String,
    aov: String,
    ratio: String,
}

impl Line {
    fn of(name: String, f: &FiguresView) -> Self {
        Line {
            name,
            claimed: f.funnel.reached,
            used: f.funnel.used,
            refunded: f.funnel.refunded,
            discount: money(f.net_discount),
            orders: f.orders,
            gmv: money(f.gmv),
            net_gmv: money(f.net_gmv),
            aov: f.average_order_value.map_or("–".into(), money),
            ratio: f
                .gmv_per_discount_x100
                .map_or("–".into(), |x| format!("{}×", decimal(x))),
        }
    }
}

/// Orders with a coupon or without, side by side.
#[derive(Debug, Clone)]
struct Compared {
    name: &'static str,
    orders: i64,
    gmv: String,
    aov: String,
}

fn compared(r: &PerformanceReport) -> Vec<Compared> {
    let t = &r.totals;
    let aov = |v: Option<i64>| v.map_or("–".into(), money);
    let plain = t.without_coupon.as_ref();
    vec![
        Compared {
            name: "With a coupon",
            orders: t.orders,
            gmv: money(t.gmv),
            aov: aov(t.average_order_value),
        },
        Compared {
            name: "Without a coupon",
            orders: plain.map_or(0, |p| p.orders),
            gmv: money(plain.map_or(0, |p| p.gmv)),
            aov: aov(plain.and_then(|p| p.average_order_value)),
        },
    ]
}

/// A funnel step: its name, count and share of the coupons that reached a holder.
#[derive(Debug, Clone)]
struct Step {
    name: &'static str,
    count: i64,
    /// Percent (two decimals) and the bar's width in percent.
    rate: String,
    width: i64,
}

#[derive(Template)]
#[template(path = "performance.html")]
struct PerformancePage {
    shell: Shell,
    heading: String,
    scope: String,
    from: String,
    to: String,
    currency: String,
    zone: String,
    steps: Vec<Step>,
    /// One line: the whole period.
    total: Vec<Line>,
    /// Orders with a coupon and without, and whose orders without one they are.
    compared: Vec<Compared>,
    baseline: String,
    days: Vec<Line>,
    channels: Vec<Line>,
}

/// The funnel as the API counts it, each step with the API's rate (of the coupons that
/// reached a holder; the refunds of the uses).
fn funnel(f: &FiguresView) -> Vec<Step> {
    let step = |name, count: i64, bps: Option<i64>| Step {
        name,
        count,
        rate: bps.map_or("–".into(), percent),
        width: bps.map_or(0, |b| (b / 100).clamp(0, 100)),
    };
    let n = &f.funnel;
    let all = (n.reached > 0).then_some(10_000);
    vec![
        step("Reached a holder", n.reached, all),
        step("Locked at checkout", n.locked, n.lock_rate_bps),
        step("Used", n.used, n.use_rate_bps),
        step("Refunded (of the uses)", n.refunded, n.refund_rate_bps),
        step("Expired unused", n.expired_unused, n.expiry_rate_bps),
        step("Revoked", n.revoked, n.revoke_rate_bps),
    ]
}

/// The performance page: opened without a period, the last 30 days.
pub async fn performance(
    State(console): State<Console>,
    session: Session,
    Query(mut q): Query<FiguresQuery>,
) -> Response {
    q.period(&console);
    let app = console.app();
    let asked = q.scope_asked().and_then(|scope| Ok((scope, q.instants()?)));
    let report = match asked {
        Ok((scope, period)) => {
            let read = app.performance(&session.principal, scope, period);
            session.act(app, reports::FIGURES, read).await
        }
        Err(p) => Err(p),
    };
    let r = match report {
        Ok(r) => r,
        Err(p) => return problem_page(&session, &p),
    };
    if q.format == "csv" {
        let name = format!("performance-{}.csv", &q.from[..10.min(q.from.len())]);
        return attachment(csv_answer(r.to_csv()), &name);
    }
    let heading = match (q.activity_id, q.template_id, q.merchant_id) {
        (Some(a), _, _) => format!("Performance of activity #{a}"),
        (_, Some(t), _) => format!("Performance of template #{t}"),
        (_, _, Some(m)) => format!("Performance of merchant #{m}"),
        _ => "Performance".to_owned(),
    };
    let page = PerformancePage {
        shell: Shell::new(&session, heading.clone()),
        heading,
        scope: q.scope(),
        from: q.from.clone(),
        to: q.to.clone(),
        currency: r.currency.clone(),
        zone: r.time_zone.clone(),
        steps: funnel(&r.totals),
        total: vec![Line::of("Total".into(), &r.totals)],
        compared: compared(&r),
        baseline: r
            .baseline_merchant_id
            .map_or("every merchant's".into(), |m| format!("merchant #{m}'s")),
        days: r
            .days
            .iter()
            .map(|d| Line::of(d.date.clone(), &d.figures))
            .collect(),
        channels: r
            .channels
            .iter()
            .map(|c| Line::of(c.channel.clone(), &c.figures))
            .collect(),
    };
    render(StatusCode::OK, &page)
}

/// A merchant's settlement, formatted.
#[derive(Debug, Clone)]
struct Owed {
    id: i64,
    merchant: String,
    given: String,
    refunded: String,
    owed: String,
    /// (template, platform share, uses, discount, platform's part, refunds, its part, owed)
    lines: Vec<[String; 8]>,
}

#[derive(Template)]
#[template(path = "settlement.html")]
struct SettlementPage {
    shell: Shell,
    scope: String,
    from: String,
    to: String,
    currency: String,
    rounding: String,
    merchants: Vec<Owed>,
    total: String,
}

/// The settlement page: opened without a period, the last 30 days.
pub async fn settlement(
    State(console): State<Console>,
    session: Session,
    Query(mut q): Query<FiguresQuery>,
) -> Response {
    q.period(&console);
    let scope = q
        .merchant_id
        .map(|m| format!("merchant_id={m}&"))
        .unwrap_or_default();
    let app = console.app();
    let merchant = match q.merchant_id.map(MerchantId::new).transpose() {
        Ok(m) => m,
        Err(why) => {
            let refused = AppError::invalid("invalid_value", "merchant_id", why);
            return problem_page(&session, &Problem::from(refused));
        }
    };
    let report = match q.instants() {
        Ok(period) => {
            let read = app.settlement(&session.principal, period, merchant);
            session.act(app, reports::FIGURES, read).await
        }
        Err(p) => Err(p),
    };
    let r = match report {
        Ok(r) => r,
        Err(p) => return problem_page(&session, &p),
    };
    if q.format == "csv" {
        let name = format!("settlement-{}.csv", &q.from[..10.min(q.from.len())]);
        return attachment(csv_answer(r.to_csv()), &name);
    }
    let names = MerchantNames::load(&console, &session).await;
    let bps = |b: u16| percent(i64::from(b));
    let page = SettlementPage {
        shell: Shell::new(&session, "Settlement"),
        scope,
        from: q.from.clone(),
        to: q.to.clone(),
        currency: r.currency.clone(),
        rounding: r.rounding.clone(),
        total: money(r.total_owed),
        merchants: r
            .merchants
            .iter()
            .map(|m| Owed {
                id: m.merchant_id.get(),
                merchant: names.one(m.merchant_id.get()),
                given: money(m.platform_given),
                refunded: money(m.platform_refunded),
                owed: money(m.owed),
                lines: m
                    .lines
                    .iter()
                    .map(|x| {
                        [
                            format!("{} #{}", x.title, x.template_id),
                            bps(x.platform_bps),
                            x.coupons_used.to_string(),
                            money(x.discount),
                            money(x.platform_given),
                            x.coupons_refunded.to_string(),
                            money(x.platform_refunded),
                            money(x.platform_owes),
                        ]
                    })
                    .collect(),
            })
            .collect(),
    };
    render(StatusCode::OK, &page)
}
