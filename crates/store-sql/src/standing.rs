//! How templates stand now, counted in the database (the console home's cards and its
//! attention list), so a platform with any number of templates gets true figures.
//!
//! "Claimable" is the SQL form of [`TemplateStatus::Active`](coupond_domain::TemplateStatus)
//! (`catalog::push_template_status` writes the same boundaries); "low on stock" is
//! [`Template::low_on_stock`](coupond_domain::Template::low_on_stock).

use coupond_domain::{MerchantId, Template, Timestamp, LOW_STOCK_DIVISOR};
use coupond_store::{Standing, StoreResult};

use crate::catalog::{template_row, PUBLIC};
use crate::{sql, Db};

/// A claimable template at `$1`, as a condition on `templates`' own columns.
fn claimable() -> String {
    format!("{PUBLIC} AND claim_start <= $1 AND $1 < claim_end")
}

/// Low on stock, over the template's `total_stock` and `claimed` (as its columns read it).
fn low_stock() -> String {
    format!("total_stock > 0 AND (total_stock - claimed) * {LOW_STOCK_DIVISOR} < total_stock")
}

/// `AND merchant_id = $2` when one merchant's templates are asked for.
fn only(merchant: Option<MerchantId>) -> &'static str {
    match merchant {
        Some(_) => "AND merchant_id = $2",
        None => "",
    }
}

pub async fn standing(
    db: &dyn Db,
    merchant: Option<MerchantId>,
    now: Timestamp,
) -> StoreResult<Standing> {
    let d = db.dialect();
    // The inner select reads the columns as every template read does (PostgreSQL sums
    // `claimed` over its stock shards) and marks the claimable ones.
    let q = sql(format!(
        "SELECT COALESCE({claimed}, 0) AS claimed, COALESCE({used}, 0) AS used,
                COALESCE({live}, 0) AS claimable, COALESCE({low}, 0) AS low_stock,
                COALESCE({gone}, 0) AS sold_out
         FROM (SELECT {cols}, total_stock,
                      CASE WHEN {claimable} THEN 1 ELSE 0 END AS live
               FROM templates WHERE 1 = 1 {only}) t",
        claimed = d.sum("claimed"),
        used = d.sum("used"),
        live = d.sum("live"),
        low = d.sum(&format!(
            "CASE WHEN live = 1 AND {} THEN 1 ELSE 0 END",
            low_stock()
        )),
        gone = d.sum(
            "CASE WHEN live = 1 AND total_stock > 0 AND claimed >= total_stock THEN 1 ELSE 0 END"
        ),
        cols = db.dialect().template_columns(),
        only = only(merchant),
        claimable = claimable(),
    ))
    .bind(now);
    let q = match merchant {
        Some(m) => q.bind(m.get()),
        None => q,
    };
    let r = db.read_one(q).await?;
    Ok(Standing {
        claimable: r.i64("claimable")?,
        low_stock: r.i64("low_stock")?,
        sold_out: r.i64("sold_out")?,
        claimed: r.i64("claimed")?,
        used: r.i64("used")?,
    })
}

pub async fn needing_attention(
    db: &dyn Db,
    merchant: Option<MerchantId>,
    now: Timestamp,
    soon: Timestamp,
    limit: u32,
) -> StoreResult<Vec<Template>> {
    let (merchant_only, soon_at, limit_at) = match merchant {
        Some(_) => (only(merchant), "$3", "$4"),
        None => ("", "$2", "$3"),
    };
    let q = sql(format!(
        "SELECT * FROM (SELECT {cols}, total_stock, expires_at FROM templates
                        WHERE {claimable} {merchant_only}) t
         WHERE ({low}) OR expires_at < {soon_at}
         ORDER BY expires_at, id LIMIT {limit_at}",
        cols = db.dialect().template_columns(),
        low = low_stock(),
        claimable = claimable(),
    ))
    .bind(now);
    let q = match merchant {
        Some(m) => q.bind(m.get()),
        None => q,
    };
    let q = q.bind(soon).bind(i64::from(limit));
    db.read_all(q).await?.iter().map(template_row).collect()
}

/// Orders whose lock ends before `before`, still locked.
pub async fn locks_due_before(db: &dyn Db, before: Timestamp) -> StoreResult<i64> {
    let q = sql("SELECT count(*) AS n FROM orders WHERE state = 'locked' AND deadline < $1")
        .bind(before);
    db.read_one(q).await?.i64("n")
}
