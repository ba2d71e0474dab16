//! [`ReportStore::figures`](coupond_store::ReportStore::figures) on every backend: what
//! happened to some templates' coupons in a period, per hour and channel, and the orders that
//! used them. Each count is one grouped query over the coupon log, the refunds, the coupons or
//! the orders, joined to the coupons for their template and channel; orders are counted once
//! each (per channel, and overall) through `DISTINCT`. Closed hours' figures are kept per set
//! of templates (`figure_hours`, `figure_spans`) by [`keep_figures`] and read back by
//! [`kept_figures`]. Orders paid without a coupon are counted by the hour they were recorded,
//! through their own partial indexes ([`plain_sql`]).

use std::collections::BTreeMap;

use coupond_domain::Timestamp;
use coupond_store::{
    Baseline, ChannelHour, FigureKey, Figures, FiguresQuery, KeptFigures, OrderHour, PlainHour,
    StoreResult,
};

use crate::claims::multi_row;
use crate::{sql, Db, Dialect, Row};

/// The channel a coupon is reported under, as SQL: its source label if the claim gave one
/// (`source:<label>`), else its channel. Computed in the query, so an order is counted once
/// per reported channel.
fn reported(d: Dialect) -> String {
    format!(
        "CASE WHEN c.source IS NOT NULL THEN {} ELSE c.channel END",
        d.concat("'source:'", "c.source")
    )
}

fn channel_of(r: &Row) -> StoreResult<String> {
    Ok(r.str("ch")?.to_owned())
}

pub async fn figures(db: &dyn Db, q: &FiguresQuery<'_>) -> StoreResult<Figures> {
    if q.from >= q.to {
        return Ok(Figures::default());
    }
    let without = plain(db, q).await?;
    if q.templates.is_empty() {
        return Ok(Figures {
            without,
            ..Figures::default()
        });
    }
    let d = db.dialect();
    let ids: Vec<i64> = q.templates.iter().map(|t| t.get()).collect();
    let mut by: BTreeMap<(Timestamp, String), ChannelHour> = BTreeMap::new();
    let read = |sql_text: String| sql(sql_text).bind(ids.clone()).bind(q.from).bind(q.to);
    for r in db.read_all(read(log_sql(d))).await? {
        let e = slot(&mut by, r.time("hour")?, channel_of(&r)?);
        e.issued += r.i64("issued")?;
        e.claimed += r.i64("claimed")?;
        e.locked += r.i64("locked")?;
        e.used += r.i64("used")?;
        e.revoked += r.i64("revoked")?;
        e.discount += r.i64("discount")?;
    }
    for r in db.read_all(read(refunds_sql(d))).await? {
        let e = slot(&mut by, r.time("hour")?, channel_of(&r)?);
        e.refunded += r.i64("n")?;
        e.refunded_discount += r.i64("discount")?;
    }
    for r in db.read_all(read(orders_sql(d, true, false))).await? {
        let e = slot(&mut by, r.time("hour")?, channel_of(&r)?);
        e.orders += r.i64("orders")?;
        e.order_value += r.i64("value")?;
    }
    for r in db.read_all(read(orders_sql(d, true, true))).await? {
        let e = slot(&mut by, r.time("hour")?, channel_of(&r)?);
        e.orders_refunded += r.i64("orders")?;
        e.refunded_value += r.i64("value")?;
    }
    let mut orders: BTreeMap<Timestamp, OrderHour> = BTreeMap::new();
    for r in db.read_all(read(orders_sql(d, false, false))).await? {
        let h = r.time("hour")?;
        let e = orders.entry(h).or_insert_with(|| OrderHour::new(h));
        e.orders += r.i64("orders")?;
        e.order_value += r.i64("value")?;
        e.order_discount += r.i64("discount")?;
    }
    for r in db.read_all(read(orders_sql(d, false, true))).await? {
        let h = r.time("hour")?;
        let e = orders.entry(h).or_insert_with(|| OrderHour::new(h));
        e.orders_refunded += r.i64("orders")?;
        e.refunded_value += r.i64("value")?;
    }
    Ok(Figures {
        channels: by.into_values().collect(),
        orders: orders.into_values().collect(),
        without,
    })
}

/// The baseline's orders paid without a coupon, per hour recorded.
async fn plain(db: &dyn Db, q: &FiguresQuery<'_>) -> StoreResult<Vec<PlainHour>> {
    let merchant = match q.baseline {
        Baseline::Platform => None,
        Baseline::Merchant(m) => Some(m.get()),
    };
    let mut read = sql(plain_sql(db.dialect(), merchant.is_some()))
        .bind(q.from)
        .bind(q.to);
    if let Some(m) = merchant {
        read = read.bind(m);
    }
    db.read_all(read)
        .await?
        .iter()
        .map(|r| {
            Ok(PlainHour {
                hour: r.time("hour")?,
                orders: r.i64("orders")?,
                order_value: r.i64("value")?,
            })
        })
        .collect()
}

/// Orders recorded without a coupon in `[$1, $2)`, of merchant `$3` if `merchant`, by hour.
/// (They are all confirmed: saying so lets MariaDB find them through `orders_by_end`.)
fn plain_sql(d: Dialect, merchant: bool) -> String {
    format!(
        "SELECT {hour} AS hour, COUNT(*) AS orders, COALESCE({value}, 0) AS value
         FROM orders o
         WHERE o.plain = 1 AND o.state = 'confirmed' AND o.ended_at >= $1 AND o.ended_at < $2{only}
         GROUP BY {hour}",
        hour = d.hour("o.ended_at"),
        value = d.sum("o.subtotal"),
        only = if merchant {
            " AND o.merchant_id = $3"
        } else {
            ""
        },
    )
}

/// Unused coupons whose validity ended in the period, up to the earlier of its end and now
/// (later ones have not expired yet), through the index of unused coupons by expiry.
pub async fn expired_unused(db: &dyn Db, q: &FiguresQuery<'_>) -> StoreResult<Vec<ChannelHour>> {
    let end = if q.now < q.to { q.now } else { q.to };
    if q.templates.is_empty() || q.from >= end {
        return Ok(Vec::new());
    }
    let ids: Vec<i64> = q.templates.iter().map(|t| t.get()).collect();
    let expired = sql(expired_sql(db.dialect()))
        .bind(ids)
        .bind(q.from)
        .bind(end);
    let mut out = Vec::new();
    for r in db.read_all(expired).await? {
        let mut h = ChannelHour::new(r.time("hour")?, channel_of(&r)?);
        h.expired_unused = r.i64("n")?;
        out.push(h);
    }
    Ok(out)
}

fn slot(
    by: &mut BTreeMap<(Timestamp, String), ChannelHour>,
    hour: Timestamp,
    channel: String,
) -> &mut ChannelHour {
    by.entry((hour, channel.clone()))
        .or_insert_with(|| ChannelHour::new(hour, channel))
}

/// Claims, issues, locks, uses (with their discount, kept by the refund row once refunded)
/// and revokes from the coupon log. A refund's change (from `used`) is counted from the
/// refunds instead.
fn log_sql(d: Dialect) -> String {
    format!(
        "SELECT {hour} AS hour, {ch} AS ch,
                COALESCE({issued}, 0) AS issued, COALESCE({claimed}, 0) AS claimed,
                COALESCE({locked}, 0) AS locked, COALESCE({used}, 0) AS used,
                COALESCE({revoked}, 0) AS revoked, COALESCE({discount}, 0) AS discount
         FROM coupon_events e JOIN coupons c ON c.id = e.coupon_id
         LEFT JOIN refunds r ON r.coupon_id = e.coupon_id AND r.used_at = e.at
              AND e.to_status = 'used'
         WHERE e.at >= $2 AND e.at < $3 AND {only}
         GROUP BY {hour}, {ch}",
        hour = d.hour("e.at"),
        ch = reported(d),
        issued = d
            .sum("CASE WHEN e.from_status IS NULL AND c.issuance_id IS NOT NULL THEN 1 ELSE 0 END"),
        claimed =
            d.sum("CASE WHEN e.from_status IS NULL AND c.issuance_id IS NULL THEN 1 ELSE 0 END"),
        locked = d.sum("CASE WHEN e.to_status = 'locked' THEN 1 ELSE 0 END"),
        used = d.sum("CASE WHEN e.to_status = 'used' THEN 1 ELSE 0 END"),
        revoked = d
            .sum("CASE WHEN e.to_status = 'revoked' AND e.from_status <> 'used' THEN 1 ELSE 0 END"),
        discount = d.sum(
            "CASE WHEN e.to_status = 'used' THEN COALESCE(r.discount, \
             CASE WHEN c.used_at = e.at THEN c.discount END, 0) ELSE 0 END"
        ),
        only = d.in_list("c.template_id", 1),
    )
}

/// Coupons unused when their validity ended in `[$2, $3)`: those still stored unused, and those
/// the expiry sweep has marked expired (each through its own partial index by validity).
fn expired_sql(d: Dialect) -> String {
    let part = |status: &str| {
        format!(
            "SELECT {hour} AS hour, {ch} AS ch FROM coupons c
             WHERE c.status = '{status}' AND c.valid_until >= $2 AND c.valid_until < $3
               AND {only}",
            hour = d.hour("c.valid_until"),
            ch = reported(d),
            only = d.in_list("c.template_id", 1),
        )
    };
    format!(
        "SELECT hour, ch, COUNT(*) AS n FROM ({} UNION ALL {}) x GROUP BY hour, ch",
        part("unused"),
        part("expired")
    )
}

/// Refunds made in the period and the discount they took back.
fn refunds_sql(d: Dialect) -> String {
    format!(
        "SELECT {hour} AS hour, {ch} AS ch, COUNT(*) AS n,
                COALESCE({sum}, 0) AS discount
         FROM refunds r JOIN coupons c ON c.id = r.coupon_id
         WHERE r.at >= $2 AND r.at < $3 AND {only}
         GROUP BY {hour}, {ch}",
        hour = d.hour("r.at"),
        ch = reported(d),
        sum = d.sum("r.discount"),
        only = d.in_list("r.template_id", 1),
    )
}

/// Orders confirmed (`refunded`: whose last coupon was refunded) in the period with a coupon
/// of the templates, each once per hour and, `per_channel`, once per reported channel. Orders
/// locked before amounts were recorded (no `subtotal`) are left out.
fn orders_sql(d: Dialect, per_channel: bool, refunded: bool) -> String {
    let (channel, group) = if per_channel {
        (format!(", {} AS ch", reported(d)), ", ch")
    } else {
        (String::new(), "")
    };
    // A confirmed order is found from its uses in the log (a refund clears the coupon's
    // order); a refunded one from its refunds, whenever they were made.
    let (from, at) = if refunded {
        (
            "orders o JOIN refunds r ON r.order_id = o.order_id
             JOIN coupons c ON c.id = r.coupon_id",
            "o.refunded_at",
        )
    } else {
        (
            "coupon_events e JOIN orders o ON o.order_id = e.order_id
             JOIN coupons c ON c.id = e.coupon_id",
            "e.at",
        )
    };
    let used = if refunded {
        ""
    } else {
        "e.to_status = 'used' AND"
    };
    format!(
        "SELECT hour{group}, COUNT(*) AS orders, COALESCE({value}, 0) AS value,
                COALESCE({discount}, 0) AS discount
         FROM (SELECT DISTINCT {hour} AS hour{channel}, o.order_id,
                      o.subtotal AS subtotal, COALESCE(o.discount, 0) AS discount
               FROM {from}
               WHERE {used} {at} >= $2 AND {at} < $3 AND o.subtotal IS NOT NULL
                 AND {only}) x
         GROUP BY hour{group}",
        hour = d.hour(at),
        value = d.sum("subtotal"),
        discount = d.sum("discount"),
        only = d.in_list("c.template_id", 1),
    )
}

/// The channel under which an hour's orders (each once) are kept.
const ORDERS: &str = "*";

/// The channel under which an hour's orders without a coupon are kept.
const PLAIN: &str = "-";

/// The counts of a kept row, in `figure_hours`' column order after the key.
const COUNTS: [&str; 13] = [
    "issued",
    "claimed",
    "locked",
    "used",
    "refunded",
    "revoked",
    "discount",
    "refunded_discount",
    "orders",
    "order_value",
    "order_discount",
    "orders_refunded",
    "refunded_value",
];

fn counts_of(c: &ChannelHour) -> [i64; 13] {
    [
        c.issued,
        c.claimed,
        c.locked,
        c.used,
        c.refunded,
        c.revoked,
        c.discount,
        c.refunded_discount,
        c.orders,
        c.order_value,
        0,
        c.orders_refunded,
        c.refunded_value,
    ]
}

fn plain_counts(p: &PlainHour) -> [i64; 13] {
    let mut v = [0; 13];
    v[8] = p.orders;
    v[9] = p.order_value;
    v
}

fn order_counts(o: &OrderHour) -> [i64; 13] {
    let mut v = [0; 13];
    v[8..].copy_from_slice(&[
        o.orders,
        o.order_value,
        o.order_discount,
        o.orders_refunded,
        o.refunded_value,
    ]);
    v
}

pub async fn kept_figures(
    db: &dyn Db,
    key: &FigureKey,
    from: Timestamp,
    to: Timestamp,
) -> StoreResult<KeptFigures> {
    let q = sql("SELECT hour FROM figure_spans
                 WHERE scope = $1 AND digest = $2 AND hour >= $3 AND hour < $4")
    .bind(key.scope.as_str())
    .bind(key.digest.as_str())
    .bind(from)
    .bind(to);
    let mut hours: Vec<Timestamp> = db
        .read_all(q)
        .await?
        .iter()
        .map(|r| r.time("hour"))
        .collect::<StoreResult<_>>()?;
    hours.sort();
    let q = sql(format!(
        "SELECT hour, channel, {} FROM figure_hours
         WHERE scope = $1 AND digest = $2 AND hour >= $3 AND hour < $4 ORDER BY hour, channel",
        COUNTS.join(", ")
    ))
    .bind(key.scope.as_str())
    .bind(key.digest.as_str())
    .bind(from)
    .bind(to);
    let mut figures = Figures::default();
    for r in db.read_all(q).await? {
        let hour = r.time("hour")?;
        // Rows and their hour's mark are kept in one transaction, but read in two statements:
        // an hour kept between them is counted afresh by the caller, so its rows are not used.
        if hours.binary_search(&hour).is_err() {
            continue;
        }
        kept_row(&r, hour, &mut figures)?;
    }
    Ok(KeptFigures { hours, figures })
}

/// One `figure_hours` row into `figures`.
fn kept_row(r: &Row, hour: Timestamp, figures: &mut Figures) -> StoreResult<()> {
    let n = |c: &str| r.i64(c);
    let channel = r.str("channel")?;
    if channel == PLAIN {
        figures.without.push(PlainHour {
            hour,
            orders: n("orders")?,
            order_value: n("order_value")?,
        });
        return Ok(());
    }
    if channel == ORDERS {
        figures.orders.push(OrderHour {
            hour,
            orders: n("orders")?,
            order_value: n("order_value")?,
            order_discount: n("order_discount")?,
            orders_refunded: n("orders_refunded")?,
            refunded_value: n("refunded_value")?,
        });
        return Ok(());
    }
    let mut c = ChannelHour::new(hour, channel.to_owned());
    c.issued = n("issued")?;
    c.claimed = n("claimed")?;
    c.locked = n("locked")?;
    c.used = n("used")?;
    c.refunded = n("refunded")?;
    c.revoked = n("revoked")?;
    c.discount = n("discount")?;
    c.refunded_discount = n("refunded_discount")?;
    c.orders = n("orders")?;
    c.order_value = n("order_value")?;
    c.orders_refunded = n("orders_refunded")?;
    c.refunded_value = n("refunded_value")?;
    figures.channels.push(c);
    Ok(())
}

/// Rows kept per statement (17 values each, well under every backend's parameter limit).
const KEEP_CHUNK: usize = 500;

pub async fn keep_figures(
    db: &dyn Db,
    key: &FigureKey,
    (from, to): (Timestamp, Timestamp),
    figures: &Figures,
) -> StoreResult<()> {
    let d = db.dialect();
    let rows: Vec<(Timestamp, &str, [i64; 13])> = figures
        .channels
        .iter()
        .map(|c| (c.hour, c.channel.as_str(), counts_of(c)))
        .chain(
            figures
                .orders
                .iter()
                .map(|o| (o.hour, ORDERS, order_counts(o))),
        )
        .chain(
            figures
                .without
                .iter()
                .map(|p| (p.hour, PLAIN, plain_counts(p))),
        )
        .collect();
    let mut hours = Vec::new();
    let mut h = from;
    while h < to {
        hours.push(h);
        h = h.plus(time::Duration::hours(1));
    }
    let (scope, digest) = (key.scope.as_str(), key.digest.as_str());
    let mut tx = db.begin(crate::Work::Request).await?;
    // The scope's rows counted over another set of templates are of no use any more.
    for table in ["figure_hours", "figure_spans"] {
        let q = format!("DELETE FROM {table} WHERE scope = $1 AND digest <> $2");
        tx.execute(sql(q).bind(scope).bind(digest)).await?;
    }
    let head = format!(
        "INSERT INTO figure_hours (scope, digest, hour, channel, {}) VALUES ",
        COUNTS.join(", ")
    );
    for chunk in rows.chunks(KEEP_CHUNK) {
        let mut q = multi_row(&head, chunk, |q, (hour, channel, counts)| {
            q.push_bind(scope).push(", ").push_bind(digest).push(", ");
            q.push_bind(*hour).push(", ").push_bind(*channel);
            for n in counts {
                q.push(", ").push_bind(*n);
            }
        });
        q.push(&d.on_conflict_nothing("issued"));
        tx.execute(q).await?;
    }
    for chunk in hours.chunks(KEEP_CHUNK) {
        let head = "INSERT INTO figure_spans (scope, digest, hour) VALUES ";
        let mut q = multi_row(head, chunk, |q, hour| {
            q.push_bind(scope).push(", ").push_bind(digest).push(", ");
            q.push_bind(*hour);
        });
        q.push(&d.on_conflict_nothing("hour"));
        tx.execute(q).await?;
    }
    tx.commit().await
}
