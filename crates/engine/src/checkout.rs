//! Checkout: quotes, and try/confirm/cancel of an order's coupons, applying the pure rules of
//! [`coupond_domain::checkout`] to what the store reads; and the [`Sweeper`] that ends locks
//! whose deadline passed; and the record of an order paid without a coupon
//! ([`Checkout::record_plain`]), which the campaign figures compare against.
//!
//! A lock holds its coupons until `lock_ttl` from now, or until the deadline it asks for
//! (`hold_until`, at most `max_lock_ttl` from now), and never past the earliest validity end
//! of its coupons (the deadline is cut there, and the answer's `deadline` is the one in
//! force); [`Checkout::extend`] moves a lock's deadline later, at most `max_lock_ttl` from
//! when the lock was taken and never past its coupons' validity, recorded in the audit trail.
//! A confirm refuses a coupon past its validity.
//!
//! A lock's rules run inside the store's lock transaction (as a [`LockRules`](coupond_store::LockRules) callback), on
//! the coupons and templates as that transaction sees them, so what is checked is what is
//! written: nobody can use, lock or over-reserve a coupon between the check and the write.

use std::collections::BTreeSet;
use std::sync::Arc;

use coupond_domain::checkout::{Reason, Situation};
use coupond_domain::{
    quote, Actor, Coupon, CouponId, CouponStatus, Currency, Customer, Money, Order, OrderId, Quote,
    QuoteInput, Template, TemplateId, TemplateUse, Timestamp, UserId, Zone,
};
use coupond_store::audit::{self, Change};
use coupond_store::{
    CouponQuery, ExtendStep, LockOutcome, LockPlan, LockRefusal, LockRequest, OrderStep,
    PlainOrder, RecordOutcome, Store, StoreError, StoreResult,
};
use serde_json::json;

use crate::clock::Clock;

/// The most coupons a quote looks at when the caller names none (the user's unused coupons,
/// soonest-expiring first).
pub const MAX_WALLET: u32 = 500;

/// The currency of a checkout built without one: the reference designs' yuan (minor unit fen).
pub const DEFAULT_CURRENCY: Currency = Currency::CNY;

/// Quotes and redemptions. Cheap to clone.
#[derive(Clone)]
pub struct Checkout {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    lock_ttl: time::Duration,
    max_lock_ttl: time::Duration,
    /// Recorded with each order's amounts.
    currency: Currency,
    /// The platform's time zone: where `order.weekday` and `order.local_time` are read.
    zone: Zone,
}

impl std::fmt::Debug for Checkout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkout")
            .field("lock_ttl", &self.lock_ttl)
            .field("max_lock_ttl", &self.max_lock_ttl)
            .finish_non_exhaustive()
    }
}

/// Where a quote gets its templates: the store itself, or a cache in front of it (the API's,
/// at most `cache_ttl` old). A quote is advisory: the lock re-reads every template in its own
/// transaction and decides there, so a template a second old is good enough for a quote.
#[async_trait::async_trait]
pub trait TemplateSource: Send + Sync {
    /// The templates with these ids that exist, in any order.
    async fn templates(&self, ids: &[TemplateId]) -> StoreResult<Vec<Arc<Template>>>;
}

mod errors;

pub use errors::{CheckoutError, HoldError, QuoteError};

impl Checkout {
    /// `lock_ttl`: how long a lock holds its coupons without a confirm when it asks for no
    /// deadline; `max_lock_ttl`: the furthest from now a lock or an extension may ask for.
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        lock_ttl: time::Duration,
        max_lock_ttl: time::Duration,
    ) -> Self {
        Checkout {
            store,
            clock,
            lock_ttl,
            max_lock_ttl,
            currency: DEFAULT_CURRENCY,
            zone: Zone::UTC,
        }
    }

    /// The platform's time zone (`platform.time_zone`), where conditions read the weekday and
    /// the time of day.
    pub fn with_zone(self, zone: Zone) -> Self {
        Checkout { zone, ..self }
    }

    /// What coupond knows of `user`, read only when one of `templates` has conditions that
    /// test it: most quotes need nothing but the order.
    pub async fn customer_for(
        &self,
        user: &UserId,
        templates: &[&Template],
    ) -> StoreResult<Option<Customer>> {
        if !templates.iter().any(|t| reads_customer(t)) {
            return Ok(None);
        }
        Ok(Some(self.customer(user).await?))
    }

    /// What coupond knows of `user` (tags, confirmed orders), read for conditions that test
    /// it.
    async fn customer(&self, user: &UserId) -> StoreResult<Customer> {
        let tags = self.store.user_tags(user).await?;
        let orders = self.store.confirmed_orders(user).await?;
        Ok(Customer::new(tags, orders))
    }

    /// The currency orders record with their amounts (`platform.currency`).
    pub fn with_currency(self, currency: Currency) -> Self {
        Checkout { currency, ..self }
    }

    pub fn lock_ttl(&self) -> time::Duration {
        self.lock_ttl
    }

    /// A lock's deadline at `now`: `hold_until` if it is after now and at most
    /// `max_lock_ttl` from now, now + `lock_ttl` without one.
    pub fn deadline(
        &self,
        hold_until: Option<Timestamp>,
        now: Timestamp,
    ) -> Result<Timestamp, HoldError> {
        let Some(asked) = hold_until else {
            return Ok(now.plus(self.lock_ttl));
        };
        let latest = now.plus(self.max_lock_ttl);
        if asked <= now {
            Err(HoldError::NotAfterNow)
        } else if asked > latest {
            Err(HoldError::TooFar(latest))
        } else {
            Ok(asked)
        }
    }

    /// A quote for `order`: over the named coupons (which must all be the order's user's), or
    /// else over the user's unused coupons, with their templates from `source`. No side
    /// effects.
    pub async fn quote(
        &self,
        order: &Order,
        named: Option<&[CouponId]>,
        source: &dyn TemplateSource,
    ) -> Result<Quote, QuoteError> {
        let coupons = match named {
            Some(ids) => {
                let found = self.store.coupons_by_ids(ids).await?;
                for (i, id) in ids.iter().enumerate() {
                    // Another user's coupon is answered like a missing one (I6).
                    if !found
                        .iter()
                        .any(|c| c.id == *id && c.user_id == order.user_id)
                    {
                        return Err(QuoteError::NotTheUsers(i));
                    }
                }
                found
            }
            None => {
                self.store
                    .user_coupons(&CouponQuery {
                        merchant: None,
                        user: order.user_id.clone(),
                        status: Some(CouponStatus::Unused),
                        now: self.clock.now(),
                        after: None,
                        limit: MAX_WALLET,
                    })
                    .await?
            }
        };
        let templates = source.templates(&template_ids(&coupons)).await?;
        let templates: Vec<&Template> = templates.iter().map(Arc::as_ref).collect();
        let customer = self.customer_for(&order.user_id, &templates).await?;
        let uses = uses(&templates);
        quote(&QuoteInput {
            order,
            now: self.clock.now(),
            coupons: &coupons,
            templates: &uses,
            situation: Situation {
                zone: self.zone,
                customer: customer.as_ref(),
            },
        })
        .map_err(|e| QuoteError::Store(StoreError::other(e.message)))
    }

    /// Locks exactly `coupons` for `order_id` until `hold_until` (or now + `lock_ttl`; see
    /// [`Checkout::deadline`]), if together they are the best combination of themselves for
    /// `order` (each usable, none redundant); otherwise refuses with every coupon's reasons
    /// and writes nothing.
    pub async fn lock(
        &self,
        order_id: &OrderId,
        order: &Order,
        coupons: &[CouponId],
        hold_until: Option<Timestamp>,
        fingerprint: [u8; 32],
        actor: &Actor,
    ) -> Result<LockOutcome, CheckoutError> {
        let now = self.clock.now();
        let deadline = self.deadline(hold_until, now)?;
        // Read before the lock's transaction, which cannot wait on another read: which
        // templates it locks is known only inside it.
        let customer = self.customer(&order.user_id).await?;
        let situation = Situation {
            zone: self.zone,
            customer: Some(&customer),
        };
        let rules = |found: &[Coupon], templates: &[Template]| {
            let at = At {
                now,
                deadline,
                situation,
            };
            plan(order_id, order, coupons, found, templates, at)
        };
        let req = LockRequest {
            order_id,
            user: &order.user_id,
            coupons,
            fingerprint,
            deadline,
            actor,
            now,
            subtotal: order.total(),
            currency: self.currency.as_str(),
            zone: self.zone,
        };
        Ok(again(|| self.store.lock_order(&req, &rules)).await?)
    }

    /// Records `order` as paid without a coupon (confirmed now, discount 0), for the campaign
    /// figures' average order value without a coupon. The same request again answers the
    /// order as recorded; another request with the order id (a record or a lock) conflicts.
    pub async fn record_plain(
        &self,
        order_id: &OrderId,
        order: &Order,
        fingerprint: [u8; 32],
    ) -> StoreResult<RecordOutcome> {
        let now = self.clock.now();
        let answer = json!({
            "order_total": order.total(),
            "discount": Money::ZERO,
            "total_after": order.total(),
            "coupons": [],
        });
        let plain = PlainOrder {
            order_id,
            user: &order.user_id,
            merchant: order.sole_merchant(),
            subtotal: order.total(),
            currency: self.currency.as_str(),
            fingerprint,
            answer: &answer,
            now,
        };
        let change = Change::new("order.record", "order", now)
            .object_key(order_id.as_str())
            .merchant(order.sole_merchant())
            .after(&answer);
        again(|| audit::change(change.clone(), self.store.record_plain(&plain))).await
    }

    /// Moves a locked order's deadline later, to `hold_until` (after now, at most
    /// `max_lock_ttl` from when the lock was taken, and not past the earliest validity end of
    /// the coupons it holds), recorded in the audit trail as `order.extend` with the deadlines
    /// before and after. The same `hold_until` again changes nothing and answers `Already`; an
    /// earlier one, `Earlier`; an order no longer locked, `Ended`.
    pub async fn extend(
        &self,
        order_id: &OrderId,
        hold_until: Timestamp,
    ) -> Result<ExtendStep, CheckoutError> {
        let now = self.clock.now();
        let deadline = self.deadline(Some(hold_until), now)?;
        let before = self.store.order(order_id).await?;
        // The whole life of a lock is bounded, not each extension: otherwise a lock extended
        // again and again would hold its coupons and its budget for ever.
        let held = self.store.order_coupons(order_id).await?;
        let latest = held
            .iter()
            .filter(|c| c.stored_status == CouponStatus::Locked)
            .map(|c| c.valid_until)
            .fold(before.created_at.plus(self.max_lock_ttl), Timestamp::min);
        if deadline > latest {
            return Err(HoldError::TooFar(latest).into());
        }
        let change = Change::new("order.extend", "order", now)
            .object_key(order_id.as_str())
            .before(&json!({ "deadline": before.deadline }))
            .after(&json!({ "deadline": deadline }));
        let step = again(|| {
            let write = self.store.extend_order(order_id, deadline, now);
            audit::change(change.clone(), write)
        })
        .await?;
        if let ExtendStep::Done(o) = &step {
            tracing::info!(order_id = %order_id, from = %before.deadline, to = %o.deadline, "lock extended");
        }
        Ok(step)
    }

    pub async fn confirm(&self, order_id: &OrderId, actor: &Actor) -> StoreResult<OrderStep> {
        let now = self.clock.now();
        let step = again(|| self.store.confirm_order(order_id, actor, now)).await?;
        coupond_store::failpoints::hit("confirm.after_commit")?;
        if let OrderStep::AmountViolation(why) = &step {
            // The safeguard fired: this should never happen. Loud, and counted.
            tracing::error!(order_id = %order_id, violation = %why, "amount verification refused a confirm");
            metrics::counter!("coupond_amount_verification_failures_total").increment(1);
        }
        Ok(step)
    }

    pub async fn cancel(&self, order_id: &OrderId, actor: &Actor) -> StoreResult<OrderStep> {
        let now = self.clock.now();
        again(|| self.store.cancel_order(order_id, actor, now)).await
    }
}

/// Attempts in all of a checkout step the database refused as unavailable.
const ATTEMPTS: usize = 3;

/// Runs a checkout step again when the database answers "unavailable": on MariaDB that
/// includes a transaction InnoDB rolled back to break a deadlock (1213) or a lock wait that
/// timed out (1205), which its manual says to restart. Lock, confirm and cancel are
/// idempotent by order id, so a step whose commit did land before the error is answered as
/// a replay the second time.
async fn again<T, F, Fut>(mut step: F) -> StoreResult<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = StoreResult<T>>,
{
    let mut attempt = 1;
    loop {
        match step().await {
            Err(StoreError::Unavailable(e)) if attempt < ATTEMPTS => {
                tracing::debug!(error = %e, attempt, "checkout step refused as unavailable; trying again");
                metrics::counter!("coupond_checkout_retries_total").increment(1);
                attempt += 1;
            }
            other => return other,
        }
    }
}

fn template_ids(coupons: &[Coupon]) -> Vec<TemplateId> {
    let ids: BTreeSet<TemplateId> = coupons.iter().map(|c| c.template_id).collect();
    ids.into_iter().collect()
}

/// What each template has left to give: its budget less what was given and what locks hold.
fn uses<'a>(templates: &[&'a Template]) -> Vec<TemplateUse<'a>> {
    templates.iter().map(|&t| TemplateUse::of(t)).collect()
}

/// Whether `t`'s conditions test the customer.
fn reads_customer(t: &Template) -> bool {
    t.spec.conditions().is_some_and(|c| c.reads_customer())
}

/// When a lock is planned, until when it may hold, and what its conditions read.
#[derive(Clone, Copy)]
struct At<'a> {
    now: Timestamp,
    deadline: Timestamp,
    situation: Situation<'a>,
}

/// The lock's rules, on the coupons and templates as the lock's transaction reads them.
fn plan(
    order_id: &OrderId,
    order: &Order,
    asked: &[CouponId],
    found: &[Coupon],
    templates: &[Template],
    at: At<'_>,
) -> Result<LockPlan, LockRefusal> {
    let At {
        now,
        deadline,
        situation,
    } = at;
    let mut refused: Vec<(CouponId, Vec<Reason>)> = asked
        .iter()
        .filter(|id| {
            !found
                .iter()
                .any(|c| c.id == **id && c.user_id == order.user_id)
        })
        .map(|id| (*id, vec![Reason::NotOwner]))
        .collect();
    if !refused.is_empty() {
        return Err(LockRefusal { coupons: refused });
    }
    let templates: Vec<&Template> = templates.iter().collect();
    let uses = uses(&templates);
    let q = quote(&QuoteInput {
        order,
        now,
        coupons: found,
        templates: &uses,
        situation,
    })
    .map_err(|e| {
        tracing::error!(error = %e.message, "lock: the quote of stored coupons failed");
        LockRefusal {
            coupons: asked
                .iter()
                .map(|id| (*id, vec![Reason::NotOwner]))
                .collect(),
        }
    })?;
    for c in &q.coupons {
        if !c.reasons.is_empty() {
            refused.push((c.coupon_id, c.reasons.clone()));
        } else if !c.chosen {
            refused.push((c.coupon_id, vec![Reason::Redundant]));
        }
    }
    if !refused.is_empty() {
        return Err(LockRefusal { coupons: refused });
    }
    let best = &q.best;
    // A lock never outlives its coupons: its deadline ends at the earliest validity end.
    let deadline = found
        .iter()
        .map(|c| c.valid_until)
        .fold(deadline, Timestamp::min);
    Ok(LockPlan {
        deadline: Some(deadline),
        discounts: best
            .coupons
            .iter()
            .map(|a| (a.coupon_id, a.discount))
            .collect(),
        answer: json!({
            "order_id": order_id,
            "deadline": deadline,
            "order_total": q.order_total,
            "discount": best.discount,
            "total_after": best.total_after,
            "coupons": best.coupons,
            "lines": best.lines,
            "schedule": best.schedule,
        }),
    })
}

/// Ends locks whose deadline has passed (the same effect as a cancel), each exactly once even
/// when a late confirm or another instance's sweeper races it: the store ends a lock only from
/// `locked`, under the order's row lock.
#[derive(Clone)]
pub struct Sweeper {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Sweeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sweeper").finish_non_exhaustive()
    }
}

/// Locks ended per transaction.
const SWEEP_BATCH: u32 = 200;

impl Sweeper {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        Sweeper { store, clock }
    }

    /// Ends every lock due at the clock's now; returns their order ids.
    pub async fn run_once(&self) -> StoreResult<Vec<OrderId>> {
        let now = self.clock.now();
        let mut ended = Vec::new();
        loop {
            let batch = self.store.expire_locks(now, SWEEP_BATCH).await?;
            if !batch.is_empty() {
                coupond_store::failpoints::hit("sweeper.after_commit")?;
            }
            let more = batch.len() == SWEEP_BATCH as usize;
            ended.extend(batch);
            if !more {
                return Ok(ended);
            }
        }
    }
}

#[cfg(test)]
mod retry_tests {
    use super::*;

    fn unavailable() -> StoreError {
        StoreError::Unavailable("deadlock".into())
    }

    #[tokio::test]
    async fn a_step_refused_as_unavailable_is_tried_again_up_to_three_times() {
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let step = |fail_first: usize| {
            let calls = &calls;
            move || async move {
                let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if n < fail_first {
                    Err(unavailable())
                } else {
                    Ok(n)
                }
            }
        };
        assert_eq!(
            again(step(2)).await.unwrap(),
            2,
            "the third attempt succeeds"
        );
        calls.store(0, std::sync::atomic::Ordering::SeqCst);
        assert!(matches!(
            again(step(3)).await,
            Err(StoreError::Unavailable(_))
        ));
        assert_eq!(
            calls.load(std::sync::atomic::Ordering::SeqCst),
            3,
            "three attempts, no more"
        );
        calls.store(0, std::sync::atomic::Ordering::SeqCst);
        let other = again(|| async { Err::<(), _>(StoreError::NotFound) }).await;
        assert!(
            matches!(other, Err(StoreError::NotFound)),
            "other errors are not retried"
        );
    }
}
