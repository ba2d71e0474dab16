//! Per-user counters of a claim batch on MySQL (`holdings`), taken before the stock.

use std::collections::HashMap;

use coupond_domain::TemplateId;
use coupond_store::{ClaimOutcome, ClaimRequest, StoreResult};
use coupond_store_sql::{sql, Exec};

use super::{Terms, CHUNK};
use crate::script::Script;

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

/// The distinct users of `candidates`, sorted: the order their counters are locked in.
pub(super) fn users<'c>(claims: &'c [ClaimRequest], candidates: &[usize]) -> Vec<&'c str> {
    let mut users: Vec<&str> = candidates
        .iter()
        .map(|&i| claims[i].user.as_str())
        .collect();
    users.sort_unstable();
    users.dedup();
    users
}

/// Writes the upserts that take the counters of `users` (sorted, distinct) on `template`:
/// they create the missing ones (at 1) and lock them all exclusively, in user order. The
/// statements' indexes, one per chunk of [`CHUNK`] users, for [`held`].
pub(super) fn lock_into(s: &mut Script, template: TemplateId, users: &[&str]) -> Vec<usize> {
    users
        .chunks(CHUNK)
        .map(|chunk| {
            s.rows(
                "INSERT INTO holdings (template_id, user_id, n) VALUES ",
                chunk,
                |s, user| {
                    s.int(template.get()).sql(", ").text(user).sql(", 1");
                },
            )
            // An update, which takes an existing row exclusively (`n = n` would be run as
            // `INSERT IGNORE`, a shared lock, and two batches of one user would deadlock
            // upgrading it), and a change, which MySQL counts.
            .sql(" ON DUPLICATE KEY UPDATE n = holdings.n + ")
            .int(MARK);
            s.end()
        })
        .collect()
}

/// The counters [`lock_into`]'s upserts took, from what each one `changed`: a chunk whose
/// users were all new needs no read; the others are read, under the locks just taken.
pub(super) async fn held<E: Exec + ?Sized>(
    tx: &mut E,
    template: TemplateId,
    users: &[&str],
    changed: &[u64],
) -> StoreResult<Held> {
    let mut held = Held(HashMap::with_capacity(users.len()));
    let new = Holding {
        n: 0,
        created: true,
    };
    for (chunk, counted) in users.chunks(CHUNK).zip(changed.iter().copied()) {
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

/// Writes the statements that put back every counter [`lock_into`] took whose row does not
/// already say what the batch counts (the ones it created at 1 and granted one coupon are
/// left as they are), and drop the ones at 0 (users this batch created a counter for and
/// granted nothing: a sold-out refusal).
pub(super) fn write_into(s: &mut Script, template: TemplateId, held: &Held) {
    let mut counted: Vec<(&str, i64)> = held
        .0
        .iter()
        .filter(|(_, h)| !(h.created && h.n == 1))
        .map(|(u, h)| (u.as_str(), h.n))
        .collect();
    counted.sort_unstable();
    let (unused, kept): (Vec<_>, Vec<_>) = counted.into_iter().partition(|&(_, n)| n == 0);
    for chunk in kept.chunks(CHUNK) {
        s.rows(
            "INSERT INTO holdings (template_id, user_id, n) VALUES ",
            chunk,
            |s, &(user, n)| {
                s.int(template.get()).sql(", ").text(user).sql(", ").int(n);
            },
        )
        .sql(" ON DUPLICATE KEY UPDATE n = VALUES(n)");
        s.end();
    }
    for chunk in unused.chunks(CHUNK) {
        s.sql("DELETE FROM holdings WHERE template_id = ")
            .int(template.get())
            .sql(" AND user_id IN (");
        for (k, &(user, _)) in chunk.iter().enumerate() {
            s.sql(if k == 0 { "" } else { ", " }).text(user);
        }
        s.sql(")");
        s.end();
    }
}
