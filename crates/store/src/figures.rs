//! The campaign figures as the store counts them: per hour and channel, what happened to some
//! templates' coupons, and the orders that used them ([`ReportStore::figures`](crate::ReportStore::figures)).
//! The engine turns them into funnels, local days and ratios. Beside them, the orders paid
//! without a coupon ([`PlainHour`]), of the platform or one merchant ([`Baseline`]).

use coupond_domain::{MerchantId, TemplateId, Timestamp};

/// What happened in one hour to coupons that came through one channel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelHour {
    /// The hour's start (UTC).
    pub hour: Timestamp,
    /// The coupons' channel as stored (`direct`, `listing:12`, `code:7`, `issuance:3`,
    /// `service`), or `source:<label>` for claims that gave a source.
    pub channel: String,
    /// Coupons issued by bulk issuance jobs.
    pub issued: i64,
    /// Coupons claimed any other way (a claim, a code, the service).
    pub claimed: i64,
    pub locked: i64,
    pub used: i64,
    pub refunded: i64,
    /// Revoked while unused or locked.
    pub revoked: i64,
    /// Unused coupons whose validity ended in the hour.
    pub expired_unused: i64,
    /// The discount of the uses in the hour (refunded since or not).
    pub discount: i64,
    /// The discount refunds in the hour took back.
    pub refunded_discount: i64,
    /// Orders confirmed in the hour with a coupon of this channel (an order counts once in
    /// each channel it used), and their value before discounts.
    pub orders: i64,
    pub order_value: i64,
    /// Orders whose last coupon was refunded in the hour, and their value.
    pub orders_refunded: i64,
    pub refunded_value: i64,
}

/// Orders using the templates' coupons in one hour, each counted once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderHour {
    pub hour: Timestamp,
    /// Orders confirmed in the hour, their value before discounts and their whole discount
    /// (every coupon of the order, whichever template).
    pub orders: i64,
    pub order_value: i64,
    pub order_discount: i64,
    /// Orders whose last coupon was refunded in the hour, and their value.
    pub orders_refunded: i64,
    pub refunded_value: i64,
}

/// Orders recorded as paid without a coupon in one hour.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlainHour {
    pub hour: Timestamp,
    pub orders: i64,
    /// Their value (no discount).
    pub order_value: i64,
}

/// Whose orders without a coupon a report compares against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Baseline {
    /// Every one recorded.
    Platform,
    /// Those whose every line is this merchant's.
    Merchant(MerchantId),
}

/// What [`ReportStore::figures`](crate::ReportStore::figures) reads: these templates over
/// `[from, to)`, expiries judged at `now`, and the orders without a coupon of `baseline`.
#[derive(Clone, Debug)]
pub struct FiguresQuery<'a> {
    pub templates: &'a [TemplateId],
    pub baseline: Baseline,
    pub from: Timestamp,
    pub to: Timestamp,
    pub now: Timestamp,
}

/// Under what a report's closed hours are kept: the scope's name (`activity:3`,
/// `activity:3/merchant:2`, `platform`) and a digest of the set of templates it covered, so a
/// scope whose set changed is counted afresh (its old rows replaced, one set per name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FigureKey {
    pub scope: String,
    pub digest: String,
}

/// What [`ReportStore::kept_figures`](crate::ReportStore::kept_figures) found: the hours
/// counted before (quiet ones included) and their figures.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeptFigures {
    pub hours: Vec<Timestamp>,
    pub figures: Figures,
}

/// The hours of a period that had anything, oldest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    pub channels: Vec<ChannelHour>,
    pub orders: Vec<OrderHour>,
    /// The baseline's orders without a coupon.
    pub without: Vec<PlainHour>,
}

impl ChannelHour {
    /// Nothing yet, in `hour` through `channel`.
    pub fn new(hour: Timestamp, channel: String) -> Self {
        ChannelHour {
            hour,
            channel,
            issued: 0,
            claimed: 0,
            locked: 0,
            used: 0,
            refunded: 0,
            revoked: 0,
            expired_unused: 0,
            discount: 0,
            refunded_discount: 0,
            orders: 0,
            order_value: 0,
            orders_refunded: 0,
            refunded_value: 0,
        }
    }
}

impl OrderHour {
    /// No order yet in `hour`.
    pub fn new(hour: Timestamp) -> Self {
        OrderHour {
            hour,
            orders: 0,
            order_value: 0,
            order_discount: 0,
            orders_refunded: 0,
            refunded_value: 0,
        }
    }
}
