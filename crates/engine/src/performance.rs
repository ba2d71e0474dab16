//! The performance report: whether a campaign paid. For a template, an activity, a merchant or
//! the whole platform over a period: the funnel (issued, claimed, locked, used, refunded,
//! expired unused, revoked) with its rates, the discount given, the value of the orders that
//! used a coupon (GMV) and its ratio to the discount, the average order value beside that of
//! orders paid without a coupon (the [`Baseline`]'s), each by local day of the platform's zone
//! and by channel. Counted from the store's records on request
//! ([`coupond_store::ReportStore::figures`]), so every figure is exact at the moment it is
//! read. Whole hours that ended more than [`SETTLE`] ago cannot change any more, so each is
//! counted once per set of templates and kept (`ReportStore::keep_figures`): a month's report
//! reads its kept hours and counts only the last hour or two afresh.
//!
//! Days are local days of the platform's zone, each UTC hour counted in the day it begins in
//! (exact for zones offset by whole hours; see [`crate::stats`]). An order counts once in the
//! totals and in each day, and once in each channel it used a coupon of, so channel lines may
//! add up to more orders than the total.

use std::collections::BTreeMap;

use coupond_domain::{ActivityId, Channel, MerchantId, TemplateId, Timestamp, Zone};
use coupond_store::{
    Baseline, ChannelHour, FigureKey, Figures, FiguresQuery, Narrow, OrderHour, Page, PlainHour,
    Store, StoreResult, TemplateQuery,
};

/// Whose figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Template(TemplateId),
    Activity(ActivityId),
    Merchant(MerchantId),
    Platform,
}

/// The funnel: what happened to coupons in the period.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Funnel {
    pub issued: i64,
    pub claimed: i64,
    pub locked: i64,
    pub used: i64,
    pub refunded: i64,
    pub expired_unused: i64,
    pub revoked: i64,
}

impl Funnel {
    /// Coupons that reached a holder in the period: issued or claimed.
    pub fn reached(&self) -> i64 {
        self.issued + self.claimed
    }
}

/// One line of figures: the whole period, a day, or a channel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub funnel: Funnel,
    /// The discount of the uses in the period, and what refunds in it took back.
    pub discount: i64,
    pub refunded_discount: i64,
    /// Orders confirmed with a coupon, their value before discounts (GMV) and, for the
    /// totals and days, their whole discount.
    pub orders: i64,
    pub order_value: i64,
    pub order_discount: i64,
    /// Orders whose last coupon was refunded, and their value.
    pub orders_refunded: i64,
    pub refunded_value: i64,
    /// Orders recorded as paid without a coupon (the baseline's; in totals and days only),
    /// and their value.
    pub plain_orders: i64,
    pub plain_value: i64,
}

impl Totals {
    pub fn net_discount(&self) -> i64 {
        self.discount - self.refunded_discount
    }

    /// GMV less the value of orders refunded.
    pub fn net_order_value(&self) -> i64 {
        self.order_value - self.refunded_value
    }

    /// The average value of an order using a coupon, rounded down to the minor unit.
    pub fn average_order_value(&self) -> Option<i64> {
        (self.orders > 0).then(|| self.order_value / self.orders)
    }

    /// The average value of an order paid without a coupon, rounded down.
    pub fn average_order_value_without(&self) -> Option<i64> {
        (self.plain_orders > 0).then(|| self.plain_value / self.plain_orders)
    }

    /// GMV per unit of net discount, in hundredths (1234: 12.34 times), rounded down.
    pub fn gmv_per_discount_x100(&self) -> Option<i64> {
        let d = i128::from(self.net_discount());
        (d > 0).then(|| (i128::from(self.net_order_value()) * 100 / d) as i64)
    }

    /// `part` of `whole` in basis points, rounded down (None when `whole` is 0).
    pub fn rate_bps(part: i64, whole: i64) -> Option<i64> {
        (whole > 0).then(|| (i128::from(part) * 10_000 / i128::from(whole)) as i64)
    }

    fn add_channel(&mut self, c: &ChannelHour) {
        let f = &mut self.funnel;
        f.issued += c.issued;
        f.claimed += c.claimed;
        f.locked += c.locked;
        f.used += c.used;
        f.refunded += c.refunded;
        f.expired_unused += c.expired_unused;
        f.revoked += c.revoked;
        self.discount += c.discount;
        self.refunded_discount += c.refunded_discount;
    }

    fn add_plain(&mut self, p: &PlainHour) {
        self.plain_orders += p.orders;
        self.plain_value += p.order_value;
    }

    fn add_orders(&mut self, o: &OrderHour) {
        self.orders += o.orders;
        self.order_value += o.order_value;
        self.order_discount += o.order_discount;
        self.orders_refunded += o.orders_refunded;
        self.refunded_value += o.refunded_value;
    }
}

/// One local day's figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DayLine {
    /// `2026-03-01`, in the platform's zone.
    pub date: String,
    /// The day's first instant.
    pub start: Timestamp,
    pub totals: Totals,
}

/// One channel's figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelLine {
    /// As stored (`listing:12`), or `source:<label>`.
    pub channel: String,
    /// Its kind: `direct`, `listing`, `code`, `issuance`, `service` or `source`.
    pub kind: String,
    pub totals: Totals,
}

/// The report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Performance {
    pub scope: Scope,
    /// Whose orders without a coupon `plain_orders` counts.
    pub baseline: Baseline,
    pub from: Timestamp,
    pub to: Timestamp,
    /// The templates counted.
    pub templates: usize,
    pub totals: Totals,
    /// Every local day the period touches, oldest first, quiet ones as zeros.
    pub days: Vec<DayLine>,
    /// Channels with anything in the period, by name.
    pub channels: Vec<ChannelLine>,
}

/// Templates listed per page while gathering a merchant's or the platform's.
const PAGE: u32 = 500;

/// What a scope covers for its caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Covered {
    /// The templates counted.
    pub templates: Vec<TemplateId>,
    /// Whose orders without a coupon the figures are set beside: a merchant's own (the caller,
    /// the merchant named, or a merchant's template's), else the platform's.
    pub baseline: Baseline,
}

/// What a scope covers, as `only` (a merchant caller) may see it.
pub async fn covered(
    store: &dyn Store,
    scope: Scope,
    only: Option<MerchantId>,
    now: Timestamp,
) -> StoreResult<Covered> {
    let (templates, owner) = templates_of(store, scope, only, now).await?;
    Ok(Covered {
        templates,
        baseline: only
            .or(owner)
            .map_or(Baseline::Platform, Baseline::Merchant),
    })
}

/// The templates a scope covers, as `only` (a merchant caller) may see them, and the merchant
/// the scope is (a merchant's, or a merchant's template), if it is one's.
async fn templates_of(
    store: &dyn Store,
    scope: Scope,
    only: Option<MerchantId>,
    now: Timestamp,
) -> StoreResult<(Vec<TemplateId>, Option<MerchantId>)> {
    let mine = |m: Option<MerchantId>| only.is_none() || m == only;
    Ok(match scope {
        Scope::Template(t) => {
            let t = store.template(t).await?;
            let ids = if mine(t.merchant_id) {
                vec![t.id]
            } else {
                vec![]
            };
            (ids, t.merchant_id)
        }
        Scope::Activity(a) => {
            // One that does not exist is not found, not an empty report.
            store.activity(a).await?;
            let ids = store
                .activity_templates(a)
                .await?
                .into_iter()
                .filter(|t| mine(t.merchant_id))
                .map(|t| t.id)
                .collect();
            (ids, None)
        }
        Scope::Merchant(m) if mine(Some(m)) => {
            store.merchant(m).await?;
            (listed(store, Some(m), now).await?, Some(m))
        }
        Scope::Merchant(m) => (vec![], Some(m)),
        Scope::Platform => (listed(store, only, now).await?, None),
    })
}

/// Every template (of `merchant`, if named), page by page.
async fn listed(
    store: &dyn Store,
    merchant: Option<MerchantId>,
    now: Timestamp,
) -> StoreResult<Vec<TemplateId>> {
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .list_templates(&TemplateQuery {
                merchant,
                activity: None,
                status: None,
                city: None,
                narrow: Narrow::default(),
                now,
                page: Page { after, limit: PAGE },
            })
            .await?;
        out.extend(page.iter().map(|t| t.id));
        match page.last() {
            Some(t) if page.len() == PAGE as usize => after = Some(t.id.get()),
            _ => return Ok(out),
        }
    }
}

/// How long after an hour ends its figures are kept (`figure_hours`): longer than any write
/// stamped in the hour can take to commit, so a kept hour never misses one.
pub const SETTLE: time::Duration = time::Duration::hours(1);

const HOUR: i64 = 3_600_000_000;

pub(crate) fn floor_hour(t: Timestamp) -> Timestamp {
    let m = t.unix_micros();
    Timestamp::from_unix_micros(m - m.rem_euclid(HOUR)).unwrap_or(t)
}

fn ceil_hour(t: Timestamp) -> Timestamp {
    let f = floor_hour(t);
    if f == t {
        t
    } else {
        f.plus(time::Duration::hours(1))
    }
}

/// The version of the figures kept: raised when what is counted changes, so hours kept by an
/// earlier version are counted afresh.
const KEPT_VERSION: &str = "v2";

/// Under what the figures of `templates` (and `baseline`'s orders without a coupon), asked for
/// as `scope` by `only` (a merchant) or the platform, are kept: the scope's name and a digest
/// of the baseline and the sorted ids, so a scope whose set of templates changed (an activity
/// gained one) is counted afresh and replaces its old rows.
pub fn figure_key(
    scope: Scope,
    only: Option<MerchantId>,
    baseline: Baseline,
    templates: &[TemplateId],
) -> FigureKey {
    use sha2::{Digest, Sha256};
    let name = match scope {
        Scope::Template(t) => format!("template:{}", t.get()),
        Scope::Activity(a) => format!("activity:{}", a.get()),
        Scope::Merchant(m) => format!("merchant:{}", m.get()),
        Scope::Platform => "platform".to_owned(),
    };
    let scope = match only {
        Some(m) => format!("{name}/merchant:{}", m.get()),
        None => name,
    };
    let mut ids: Vec<i64> = templates.iter().map(|t| t.get()).collect();
    ids.sort_unstable();
    let mut h = Sha256::new();
    h.update(
        match baseline {
            Baseline::Platform => 0i64,
            Baseline::Merchant(m) => m.get(),
        }
        .to_be_bytes(),
    );
    for id in ids {
        h.update(id.to_be_bytes());
    }
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    FigureKey {
        scope,
        digest: format!("{KEPT_VERSION}:{hex}"),
    }
}

/// The runs of hours in `[first, last)` not among `kept` (sorted).
fn missing(first: Timestamp, last: Timestamp, kept: &[Timestamp]) -> Vec<(Timestamp, Timestamp)> {
    let mut out: Vec<(Timestamp, Timestamp)> = Vec::new();
    let mut h = first;
    while h < last {
        let next = h.plus(time::Duration::hours(1));
        if kept.binary_search(&h).is_err() {
            match out.last_mut() {
                Some(run) if run.1 == h => run.1 = next,
                _ => out.push((h, next)),
            }
        }
        h = next;
    }
    out
}

fn append(to: &mut Figures, more: Figures) {
    to.channels.extend(more.channels);
    to.orders.extend(more.orders);
    to.without.extend(more.without);
}

/// Who asks for which figures: the scope named, the merchant asking (`None`: the platform)
/// and the templates that covers for it.
#[derive(Clone, Copy, Debug)]
pub struct Asked<'a> {
    pub scope: Scope,
    pub only: Option<MerchantId>,
    pub covered: &'a Covered,
}

/// The report of `asked` over `[from, to)`, days in `zone`. Whole hours that ended [`SETTLE`]
/// before `now` are counted once and kept; the rest of the period, and unused coupons
/// expiring (a lock cancelled later can make one), are counted on every request. Keeping is
/// best effort: if it fails, the answer is still the one counted.
pub async fn performance(
    store: &dyn Store,
    asked: Asked<'_>,
    (from, to): (Timestamp, Timestamp),
    zone: Zone,
    now: Timestamp,
) -> StoreResult<Performance> {
    let (templates, baseline) = (&asked.covered.templates[..], asked.covered.baseline);
    let q = |from, to| FiguresQuery {
        templates,
        baseline,
        from,
        to,
        now,
    };
    let settled = now.minus(SETTLE);
    let (first, last) = (
        ceil_hour(from),
        floor_hour(if to < settled { to } else { settled }),
    );
    let mut figures;
    if first < last {
        figures = keep(store, asked, (first, last), now).await?;
        for (a, b) in [(from, first), (last, to)] {
            if a < b {
                append(&mut figures, store.figures(&q(a, b)).await?);
            }
        }
    } else {
        figures = store.figures(&q(from, to)).await?;
    }
    let expired = store.expired_unused(&q(from, to)).await?;
    figures.channels.extend(expired);
    Ok(assemble(
        (asked.scope, baseline),
        templates.len(),
        figures,
        (from, to),
        zone,
    ))
}

/// The figures of `asked` over the whole hours `[first, last)`, each ended [`SETTLE`] before
/// `now`: those kept before read back, the rest counted and kept (best effort: if keeping
/// fails, the figures are still the ones counted).
pub async fn keep(
    store: &dyn Store,
    asked: Asked<'_>,
    (first, last): (Timestamp, Timestamp),
    now: Timestamp,
) -> StoreResult<Figures> {
    let (templates, baseline) = (&asked.covered.templates[..], asked.covered.baseline);
    let key = figure_key(asked.scope, asked.only, baseline, templates);
    let kept = store.kept_figures(&key, first, last).await?;
    let mut figures = Figures::default();
    for (from, to) in missing(first, last, &kept.hours) {
        let q = FiguresQuery {
            templates,
            baseline,
            from,
            to,
            now,
        };
        let fresh = store.figures(&q).await?;
        if let Err(e) = store.keep_figures(&key, from, to, &fresh).await {
            tracing::warn!(error = %e, scope = %key.scope, "could not keep counted hours");
        }
        append(&mut figures, fresh);
    }
    append(&mut figures, kept.figures);
    Ok(figures)
}

/// Folds the store's hours into the totals, local days and channels.
fn assemble(
    (scope, baseline): (Scope, Baseline),
    templates: usize,
    figures: Figures,
    (from, to): (Timestamp, Timestamp),
    zone: Zone,
) -> Performance {
    let mut totals = Totals::default();
    let mut days: BTreeMap<i64, Totals> = (zone.day_of(from)..=last_day(zone, from, to))
        .map(|d| (d, Totals::default()))
        .collect();
    let mut channels: BTreeMap<String, Totals> = BTreeMap::new();
    for c in &figures.channels {
        totals.add_channel(c);
        days.entry(zone.day_of(c.hour)).or_default().add_channel(c);
        let line = channels.entry(c.channel.clone()).or_default();
        line.add_channel(c);
        line.orders += c.orders;
        line.order_value += c.order_value;
        line.orders_refunded += c.orders_refunded;
        line.refunded_value += c.refunded_value;
    }
    for o in &figures.orders {
        totals.add_orders(o);
        days.entry(zone.day_of(o.hour)).or_default().add_orders(o);
    }
    for p in &figures.without {
        totals.add_plain(p);
        days.entry(zone.day_of(p.hour)).or_default().add_plain(p);
    }
    Performance {
        scope,
        baseline,
        from,
        to,
        templates,
        totals,
        days: days
            .into_iter()
            .map(|(d, totals)| {
                let start = zone.day_start(d).unwrap_or(from);
                DayLine {
                    date: zone.date_text(start),
                    start,
                    totals,
                }
            })
            .collect(),
        channels: channels
            .into_iter()
            .map(|(channel, totals)| ChannelLine {
                kind: Channel::kind_of(&channel).to_owned(),
                channel,
                totals,
            })
            .collect(),
    }
}

/// The local day of the period's last instant.
fn last_day(zone: Zone, from: Timestamp, to: Timestamp) -> i64 {
    let last = Timestamp::from_unix_micros(to.unix_micros() - 1).unwrap_or(from);
    zone.day_of(last).max(zone.day_of(from))
}
