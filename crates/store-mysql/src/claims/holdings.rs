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
    held: &mut Held,
    out: &mut [Option<ClaimOutcome>],
) -> Vec<usize> {
    let mut granted = Vec::new();
    for &i in candidates {
        let user = claims[i].user.as_str();
        // Every candidate's counter was locked, so the entry is there; the insert is a guard.
        if !held.0.contains_key(user) {
            held.0.insert(user.to_owned(), Holding::default());
        }
        let Some(Holding { n, .. }) = held.0.get_mut(user) else {
            continue;
        };
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

/// Added to an existing counter by the upsert that locks it, so that the upsert changes every
/// existing row: MySQL then counts 2 for each (1 for a row it inserted), and a batch of new
/// users, a flash sale's, needs no read. [`write_holdings`] writes every existing counter back.
const MARK: i64 = 1 << 40;

/// One user's counter, as a batch holds it.
#[derive(Clone, Copy, Debug, Default)]
struct Holding {
    /// What the user holds, as the batch counts it.
    n: i64,
    /// This batch created the counter's row, at 1: what a new user holds once granted, so a
    /// flash sale's counters are written once, not inserted and then updated.
    created: bool,
}

/// The per-user counters a batch holds locked, by user.
pub(super) struct Held(HashMap<String, Holding>);

/// The counters of the candidates' users on `template`, each locked by this transaction: one
/// upsert in user order creates the missing ones (at 1) and locks them all exclusively, then
/// they are read, unless every one was new.
pub(super) async fn lock_holdings<E: Exec + ?Sized>(
    tx: &mut E,
    template: TemplateId,
    claims: &[ClaimRequest],
    candidates: &[usize],
) -> StoreResult<Held> {
    let mut users: Vec<&str> = candidates
        .iter()
        .map(|&i| claims[i].user.as_str())
        .collect();
    users.sort_unstable();
    users.dedup();
    let mut held = Held(HashMap::with_capacity(users.len()));
    let new = Holding {
        n: 0,
        created: true,
    };
    for chunk in users.chunks(CHUNK) {
        let mut q = multi_row(
            "INSERT INTO holdings (template_id, user_id, n) VALUES ",
            chunk,
            |q, user| {
                q.push_bind(template.get())
                    .push(", ")
                    .push_bind(*user)
                    .push(", 1");
            },
        );
        // An update, which takes an existing row exclusively (`n = n` would be run as
        // `INSERT IGNORE`, a shared lock, and two batches of one user would deadlock
        // upgrading it), and a change, which MySQL counts.
        q.push(" ON DUPLICATE KEY UPDATE n = holdings.n + ")
            .push_bind(MARK);
        let counted = tx.execute(q).await?;
        if counted == chunk.len() as u64 {
            held.0.extend(chunk.iter().map(|u| ((*u).to_owned(), new)));
            continue;
        }
        let mut q = sql("SELECT user_id, n FROM holdings WHERE template_id = $1 AND user_id IN (")
            .bind(template.get());
        q.push_binds(chunk.iter().copied()).push(")");
        for r in tx.fetch_all(q).await? {
            let n = r.i64("n")?;
            let holding = if n >= MARK {
                Holding {
                    n: n - MARK,
                    created: false,
                }
            } else {
                new
            };
            held.0.insert(r.string("user_id")?, holding);
        }
    }
    Ok(held)
}

/// Writes back every counter [`lock_holdings`] took whose row does not already say what the
/// batch counts (the ones it created at 1 and granted one coupon are left as they are), and
/// drops the ones at 0 (users this batch created a counter for and granted nothing: a sold-out
/// refusal).
pub(super) async fn write_holdings<E: Exec + ?Sized>(
    tx: &mut E,
    template: TemplateId,
    held: &Held,
) -> StoreResult<()> {
    let mut counted: Vec<(&str, i64)> = held
        .0
        .iter()
        .filter(|(_, h)| !(h.created && h.n == 1))
        .map(|(u, h)| (u.as_str(), h.n))
        .collect();
    counted.sort_unstable();
    let (unused, kept): (Vec<_>, Vec<_>) = counted.into_iter().partition(|&(_, n)| n == 0);
    for chunk in kept.chunks(CHUNK) {
        let mut q = multi_row(
            "INSERT INTO holdings (template_id, user_id, n) VALUES ",
            chunk,
            |q, &(user, n)| {
                q.push_bind(template.get())
                    .push(", ")
                    .push_bind(user)
                    .push(", ")
                    .push_bind(n);
            },
        );
        q.push(" ON DUPLICATE KEY UPDATE n = VALUES(n)");
        tx.execute(q).await?;
    }
    for chunk in unused.chunks(CHUNK) {
        let mut q = sql("DELETE FROM holdings WHERE template_id = $1 AND user_id IN (")
            .bind(template.get());
        q.push_binds(chunk.iter().map(|&(user, _)| user)).push(")");
        tx.execute(q).await?;
    }
    Ok(())
}
