//! The sender: posts due deliveries, each on its own task, at most `concurrency` at once,
//! `per_owner` for one owner's endpoints (a merchant's, or the platform's) and `per_endpoint`
//! to one endpoint, so a receiver that takes its time (up to the timeout) delays its own
//! deliveries only, and one owner's many slow receivers delay only that owner. Endpoints and
//! owners at their bound are left out of the next query, so their backlog cannot crowd out
//! anyone else's due deliveries either; what the query returns is started round robin
//! between owners.
//!
//! What a merchant sees of a failed attempt is "delivery failed", or the HTTP status of an
//! exchange that completed: never why a connection failed, which would tell a closed port from
//! an open one (the details go to the debug log).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use coupond_domain::Timestamp;
use coupond_store::{
    owner_key, Delivery, DeliveryAttempt, DeliveryState, DueSkip, Store, StoreResult, Webhook,
};
use http_body_util::Full;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::signature;
use super::targets::{GuardedResolver, TargetPolicy};
use crate::clock::Clock;
use crate::worker::Lease;

const LEASE: time::Duration = time::Duration::seconds(30);
/// What a failed attempt says, whatever the cause.
const FAILED: &str = "delivery failed";

/// How deliveries are retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The wait before the second attempt; it doubles for each next one.
    pub base: Duration,
    /// Attempts before a delivery is marked failed.
    pub max_attempts: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            base: Duration::from_secs(5),
            max_attempts: 12,
        }
    }
}

/// How the sender works.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SenderSettings {
    pub retry: RetryPolicy,
    /// How long a receiver has to answer.
    pub timeout: Duration,
    /// Deliveries in flight at once, over all endpoints.
    pub concurrency: usize,
    /// Deliveries in flight at once to one endpoint.
    pub per_endpoint: usize,
    /// Deliveries in flight at once to the endpoints of one owner.
    pub per_owner: usize,
}

impl Default for SenderSettings {
    fn default() -> Self {
        SenderSettings {
            retry: RetryPolicy::default(),
            timeout: Duration::from_secs(10),
            concurrency: 32,
            per_endpoint: 2,
            per_owner: 8,
        }
    }
}

/// Deliveries in flight: which, and how many per endpoint and per owner ([`owner_key`]).
#[derive(Debug, Default)]
struct Busy {
    deliveries: HashSet<i64>,
    per_endpoint: HashMap<i64, usize>,
    per_owner: HashMap<i64, usize>,
}

/// What one pass may still start per endpoint and per owner, counted from what was in flight
/// when the pass began: a delivery that ends during the pass frees its slot for the next pass,
/// not this one, so a pass starts as many as there was room for (the sender passes again as
/// soon as a delivery ends).
struct PassRoom {
    per_endpoint: HashMap<i64, usize>,
    per_owner: HashMap<i64, usize>,
}

impl PassRoom {
    /// Counts one start for `webhook` of `owner`, if this pass has room for it.
    fn take(&mut self, webhook: i64, owner: i64, settings: &SenderSettings) -> bool {
        let n = self.per_endpoint.entry(webhook).or_default();
        let o = self.per_owner.entry(owner).or_default();
        if *n >= settings.per_endpoint || *o >= settings.per_owner {
            return false;
        }
        *n += 1;
        *o += 1;
        true
    }
}

/// One less in flight under `key`; the entry goes when it reaches 0.
fn release(counts: &mut HashMap<i64, usize>, key: i64) {
    if let Some(n) = counts.get_mut(&key) {
        *n -= 1;
        if *n == 0 {
            counts.remove(&key);
        }
    }
}

/// The keys of `counts` at `bound` or past it.
fn full(counts: &HashMap<i64, usize>, bound: usize) -> Vec<i64> {
    counts
        .iter()
        .filter(|(_, n)| **n >= bound)
        .map(|(k, _)| *k)
        .collect()
}

/// A delivery's place among those in flight, given back on drop.
#[derive(Debug)]
struct Slot {
    busy: Arc<Mutex<Busy>>,
    delivery: i64,
    webhook: i64,
    owner: i64,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut busy = self.busy.lock().unwrap_or_else(PoisonError::into_inner);
        busy.deliveries.remove(&self.delivery);
        release(&mut busy.per_endpoint, self.webhook);
        release(&mut busy.per_owner, self.owner);
    }
}

/// `items` reordered so that owners take turns: each owner's first, then each one's second,
/// and so on, owners in the order of their first item (the oldest due first).
fn round_robin<T>(items: Vec<T>, owner: impl Fn(&T) -> i64) -> Vec<T> {
    let mut queues: Vec<(i64, std::collections::VecDeque<T>)> = Vec::new();
    for item in items {
        let o = owner(&item);
        match queues.iter_mut().find(|(k, _)| *k == o) {
            Some((_, q)) => q.push_back(item),
            None => queues.push((o, std::iter::once(item).collect())),
        }
    }
    let mut out = Vec::new();
    while queues.iter().any(|(_, q)| !q.is_empty()) {
        for (_, q) in &mut queues {
            out.extend(q.pop_front());
        }
    }
    out
}

/// Posts due deliveries. Cheap to clone (the clones share what is in flight).
#[derive(Clone)]
pub struct WebhookSender {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    client: Client<HttpConnector<GuardedResolver>, Full<Bytes>>,
    policy: Arc<TargetPolicy>,
    settings: SenderSettings,
    lease: Lease,
    // A std mutex: held only to update the bookkeeping, never across an await.
    busy: Arc<Mutex<Busy>>,
}

impl std::fmt::Debug for WebhookSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookSender")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl WebhookSender {
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        settings: SenderSettings,
        policy: Arc<TargetPolicy>,
        holder: impl Into<String>,
    ) -> Self {
        let mut connector = HttpConnector::new_with_resolver(GuardedResolver::new(policy.clone()));
        connector.set_connect_timeout(Some(settings.timeout));
        WebhookSender {
            store,
            clock,
            client: Client::builder(TokioExecutor::new()).build(connector),
            policy,
            settings,
            lease: Lease::new("webhooks", holder, LEASE),
            busy: Arc::default(),
        }
    }

    fn busy(&self) -> std::sync::MutexGuard<'_, Busy> {
        self.busy.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts every due delivery there is room for, each on a task in `tasks`; returns how
    /// many started (none without the lease).
    async fn start_due(&self, tasks: &mut JoinSet<()>) -> StoreResult<usize> {
        let now = self.clock.now();
        if !self.lease.hold(self.store.as_ref(), now).await? {
            return Ok(0);
        }
        // What is in flight now: such a delivery may still come back from the query (its
        // attempt not recorded yet) and must not start again, even if it ends meanwhile.
        let (room, skip, in_flight, mut pass) = {
            let busy = self.busy();
            let skip = DueSkip {
                webhooks: full(&busy.per_endpoint, self.settings.per_endpoint),
                owners: full(&busy.per_owner, self.settings.per_owner),
            };
            let room = self
                .settings
                .concurrency
                .saturating_sub(busy.deliveries.len());
            let pass = PassRoom {
                per_endpoint: busy.per_endpoint.clone(),
                per_owner: busy.per_owner.clone(),
            };
            (room, skip, busy.deliveries.clone(), pass)
        };
        if room == 0 {
            return Ok(0);
        }
        let limit = u32::try_from(room.max(50)).unwrap_or(u32::MAX);
        let due = self.store.due_deliveries(now, limit, &skip).await?;
        let mut hooks: HashMap<i64, Arc<Webhook>> = HashMap::new();
        for d in &due {
            if !hooks.contains_key(&d.webhook_id) {
                let w = self.store.webhook(d.webhook_id).await?;
                hooks.insert(w.id, Arc::new(w));
            }
        }
        let mut started = 0;
        for d in round_robin(due, |d| owner_key(hooks[&d.webhook_id].merchant_id)) {
            if started == room {
                break;
            }
            if in_flight.contains(&d.id) {
                continue;
            }
            let hook = hooks[&d.webhook_id].clone();
            let owner = owner_key(hook.merchant_id);
            if !pass.take(d.webhook_id, owner, &self.settings) {
                continue;
            }
            let Some(slot) = self.take_slot(&d, owner) else {
                continue;
            };
            let this = self.clone();
            tasks.spawn(async move {
                this.deliver(&hook, &d).await;
                drop(slot);
            });
            started += 1;
        }
        Ok(started)
    }

    /// Claims an in-flight slot for `d` (of `owner`), unless it is already in flight or its
    /// endpoint or owner is at its bound. The slot is given back when dropped (also if its
    /// task panics).
    fn take_slot(&self, d: &Delivery, owner: i64) -> Option<Slot> {
        let mut busy = self.busy();
        let n = busy.per_endpoint.get(&d.webhook_id).copied().unwrap_or(0);
        let o = busy.per_owner.get(&owner).copied().unwrap_or(0);
        if n >= self.settings.per_endpoint
            || o >= self.settings.per_owner
            || busy.deliveries.contains(&d.id)
        {
            return None;
        }
        busy.deliveries.insert(d.id);
        busy.per_endpoint.insert(d.webhook_id, n + 1);
        busy.per_owner.insert(owner, o + 1);
        Some(Slot {
            busy: self.busy.clone(),
            delivery: d.id,
            webhook: d.webhook_id,
            owner,
        })
    }

    /// One pass (for tests): starts the due deliveries there is room for and waits until
    /// they are done; returns how many were attempted.
    pub async fn run_once(&self) -> StoreResult<usize> {
        let mut tasks = JoinSet::new();
        let started = self.start_due(&mut tasks).await?;
        while tasks.join_next().await.is_some() {}
        Ok(started)
    }

    /// Posts one delivery and records the attempt and what follows it.
    async fn deliver(&self, w: &Webhook, d: &Delivery) {
        let at = self.clock.now();
        let status = self.post(w, d, at).await;
        let n = d.tries + 1;
        let state = if status.is_some_and(|s| (200..300).contains(&s)) {
            DeliveryState::Delivered
        } else if n >= i64::from(self.settings.retry.max_attempts) {
            DeliveryState::Failed
        } else {
            DeliveryState::Pending
        };
        let result = match state {
            DeliveryState::Delivered => "delivered",
            DeliveryState::Failed => "failed",
            DeliveryState::Pending => "retry",
        };
        metrics::counter!(crate::telemetry::WEBHOOK_DELIVERIES, "result" => result).increment(1);
        let waited = (at.unix_micros() - d.created_at.unix_micros()).max(0) as f64 / 1e6;
        metrics::histogram!(crate::telemetry::WEBHOOK_QUEUE_AGE_SECONDS).record(waited);
        let exponent = u32::try_from(n - 1).unwrap_or(0).min(30);
        let wait = self.settings.retry.base.saturating_mul(1 << exponent);
        let next = at.plus(time::Duration::try_from(wait).unwrap_or(time::Duration::HOUR));
        let attempt = DeliveryAttempt {
            attempt: n,
            at,
            status,
            error: status.is_none().then(|| FAILED.to_owned()),
        };
        if let Err(e) = self.store.record_attempt(d.id, &attempt, state, next).await {
            // The delivery stays due and is sent again: at least once.
            tracing::warn!(delivery = d.id, error = %e.chain(), "recording a webhook attempt failed");
        }
    }

    /// The receiver's status, or `None` if no exchange completed within the timeout.
    async fn post(&self, w: &Webhook, d: &Delivery, now: Timestamp) -> Option<u16> {
        if let Some(why) = self.policy.refuses(&w.url) {
            tracing::debug!(webhook = w.id, %why, "webhook target refused");
            return None;
        }
        let t = now.unix_micros().div_euclid(1_000_000);
        let req = hyper::Request::post(&w.url)
            .header("content-type", "application/json")
            .header("coupond-event", &d.event_type)
            .header("coupond-delivery", d.id.to_string())
            .header("coupond-signature", signature(&w.secret, t, &d.payload))
            .body(Full::new(Bytes::from(d.payload.clone())));
        let failure = match req {
            Ok(req) => {
                match tokio::time::timeout(self.settings.timeout, self.client.request(req)).await {
                    Ok(Ok(res)) => return Some(res.status().as_u16()),
                    Ok(Err(e)) => coupond_store::error::chain(&e),
                    Err(_) => format!("no answer within {:?}", self.settings.timeout),
                }
            }
            Err(e) => format!("bad request: {e}"),
        };
        tracing::debug!(webhook = w.id, delivery = d.id, error = %failure, "webhook delivery failed");
        None
    }

    /// Sends until `shutdown` turns true (or its sender is dropped): looks for due deliveries
    /// every second and whenever one in flight ends; then lets those in flight finish.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let mut tasks = JoinSet::new();
        loop {
            if *shutdown.borrow() {
                break;
            }
            if let Err(e) = self.start_due(&mut tasks).await {
                tracing::warn!(error = %e.chain(), "sending webhooks failed; retrying");
            }
            tokio::select! {
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
                changed = shutdown.changed() => if changed.is_err() { break },
            }
        }
        while tasks.join_next().await.is_some() {}
    }
}

#[cfg(test)]
mod tests {
    use super::{round_robin, PassRoom, SenderSettings};

    #[test]
    fn a_pass_starts_only_what_there_was_room_for_when_it_began() {
        let settings = SenderSettings::default();
        // Endpoint 7 had one delivery in flight when the pass began: one more may start (of
        // two per endpoint), however many of the pass's own end meanwhile.
        let mut pass = PassRoom {
            per_endpoint: [(7, 1)].into(),
            per_owner: [(0, 1)].into(),
        };
        assert!(pass.take(7, 0, &settings));
        assert!(
            !pass.take(7, 0, &settings),
            "endpoint 7 is full for this pass"
        );
        assert!(
            pass.take(8, 0, &settings),
            "another endpoint of the owner has room"
        );
    }

    #[test]
    fn owners_take_turns_oldest_first() {
        let items = vec![(1, 'a'), (1, 'b'), (1, 'c'), (2, 'x'), (3, 'p'), (2, 'y')];
        let order: String = round_robin(items, |i| i.0).iter().map(|i| i.1).collect();
        assert_eq!(order, "axpbyc");
    }
}
