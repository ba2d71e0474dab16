//! Per-user counters of a claim batch on MySQL (`holdings`), taken before the stock.

use std::collections::HashMap;

use coupond_domain::TemplateId;
use coupond_store::{ClaimOutcome, ClaimRequest, StoreResult};
use coupond_store_sql::{sql, Exec};

use super::{multi_row, Terms, CHUNK};

/// Decides which candidates get a coupon (per-user limit, then the `remaining` stock, in
/// arrival order), sets the others' outcome and counts the granted in `held`; the granted,
/// in order.
pub(super) fn grant(
    claims: &[ClaimRequest],
    candidates: &[usize],
    terms: &Terms,
    remaining: i64,
    held: &mut HashMap<String, i64>,
    out: &mut [Option<ClaimOutcome>],
) -> Vec<usize> {
    let mut granted = Vec::new();
    for &i in candidates {
        let n = held.entry(claims[i].user.as_str().to_owned()).or_insert(0);
        if *n >= terms.limit {
            out[i] = Some(ClaimOutcome::LimitReached);
        } else if granted.len() as i64 >= remaining {
            out[i] = Some(ClaimOutcome::SoldOut);
        } else {
            *n += 1;
            granted.push(i);
        }
    }
    granted
}

/// The counters of the candidates' users on `template`, each locked by this transaction: one
/// upsert in user order creates the missing ones (at 0) and locks them all exclusively, then
/// they are read.
pub(super) async fn lock_holdings<E: Exec + ?Sized>(
    tx: &mut E,
    template: TemplateId,
    claims: &[ClaimRequest],
    candidates: &[usize],
) -> StoreResult<HashMap<String, i64>> {
    let mut users: Vec<&str> = candidates
        .iter()
        .map(|&i| claims[i].user.as_str())
        .collect();
    users.sort_unstable();
    users.dedup();
    let mut held = HashMap::with_capacity(users.len());
    for chunk in users.chunks(CHUNK) {
        let q = multi_row(
            "INSERT INTO holdings (template_id, user_id, n) VALUES ",
            chunk,
            |q, user| {
                q.push_bind(template.get())
                    .push(", ")
                    .push_bind(*user)
                    .push(", 0");
            },
        );
        let mut q = q;
        // `n = holdings.n`, not `n = n`: the translator runs that form as `INSERT IGNORE`,
        // which takes only a shared lock on an existing row, and two batches of one user
        // would then deadlock upgrading it. An update takes the row exclusively.
        q.push(" ON DUPLICATE KEY UPDATE n = holdings.n");
        tx.execute(q).await?;
        let mut q = sql("SELECT user_id, n FROM holdings WHERE template_id = $1 AND user_id IN (")
            .bind(template.get());
        for (k, user) in chunk.iter().enumerate() {
            q.push(if k == 0 { "" } else { ", " }).push_bind(*user);
        }
        q.push(")");
        for r in tx.fetch_all(q).await? {
            held.insert(r.string("user_id")?, r.i64("n")?);
        }
    }
    Ok(held)
}

/// Writes the counters of the users granted a coupon, and drops the counters this batch
/// created for users it granted none (a sold-out refusal in exact mode).
pub(super) async fn write_holdings<E: Exec + ?Sized>(
    tx: &mut E,
    template: TemplateId,
    claims: &[ClaimRequest],
    granted: &[usize],
    held: &HashMap<String, i64>,
) -> StoreResult<()> {
    let mut changed: Vec<&str> = granted.iter().map(|&i| claims[i].user.as_str()).collect();
    changed.sort_unstable();
    changed.dedup();
    for chunk in changed.chunks(CHUNK) {
        let q = multi_row(
            "INSERT INTO holdings (template_id, user_id, n) VALUES ",
            chunk,
            |q, user| {
                q.push_bind(template.get())
                    .push(", ")
                    .push_bind(*user)
                    .push(", ")
                    .push_bind(held[*user]);
            },
        );
        let mut q = q;
        q.push(" ON DUPLICATE KEY UPDATE n = VALUES(n)");
        tx.execute(q).await?;
    }
    let mut unused: Vec<&str> = held
        .iter()
        .filter(|(_, &n)| n == 0)
        .map(|(u, _)| u.as_str())
        .collect();
    unused.sort_unstable();
    for chunk in unused.chunks(CHUNK) {
        let mut q = sql("DELETE FROM holdings WHERE template_id = $1 AND n = 0 AND user_id IN (")
            .bind(template.get());
        for (k, user) in chunk.iter().enumerate() {
            q.push(if k == 0 { "" } else { ", " }).push_bind(*user);
        }
        q.push(")");
        tx.execute(q).await?;
    }
    Ok(())
}
