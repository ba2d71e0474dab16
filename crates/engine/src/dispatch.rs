//! The outbox dispatcher and its observers.
//!
//! Every change writes its events to the outbox in its own transaction. The [`Dispatcher`]
//! (one per deployment: it holds a lease) hands them, in order and in batches, to each
//! [`Observer`], and records each observer's position after it handled a batch. A crash
//! between the two redelivers that batch: delivery is at least once, and observers make a
//! repeat harmless (each write keyed by the event or by what it is about).
//!
//! Observers here: [`ReminderPlanner`] (a reminder N days before a claimed or issued coupon
//! expires; cancelled when the coupon is used or expires). The inbox's is
//! [`InboxNotifier`](crate::messaging::InboxNotifier).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use coupond_domain::{TemplateId, Timestamp, UserId, Zone};
use coupond_store::events::kind;
use coupond_store::{Event, OutboxPosition, Reminder, Store, StoreResult};

/// The names of the outbox's durable consumers (their positions are stored under them), for
/// whoever reports how far behind they are.
pub mod sinks {
    pub const REMINDERS: &str = "reminders";
    pub const INBOX: &str = "inbox";
    pub const WEBHOOKS: &str = "webhooks";
    /// The API's cache invalidation (`coupond_app::invalidate`).
    pub const CACHE: &str = "cache";
    /// Every one `serve` always runs, in its order.
    pub const ALL: [&str; 4] = [REMINDERS, INBOX, WEBHOOKS, CACHE];
    /// The NATS JetStream publisher (`coupond_nats`), run when `nats.url` is set.
    pub const NATS: &str = "nats";
}

use crate::clock::Clock;
use crate::pacing::Pacer;
use crate::worker::{Lease, Pass, Worker};

/// Events handed to an observer at once.
const BATCH: u32 = 1000;
/// How long the dispatcher waits when there was nothing to do.
const IDLE: Duration = Duration::from_millis(200);
const LEASE: time::Duration = time::Duration::seconds(10);

/// A consumer of the outbox. `handle` gets events in order; it must tolerate seeing a batch
/// again after a crash.
#[async_trait]
pub trait Observer: Send + Sync {
    /// Names its position in the outbox; never change it.
    fn name(&self) -> &str;
    async fn handle(&self, events: &[Event]) -> StoreResult<()>;
}

/// Hands the outbox to the observers.
#[derive(Clone)]
pub struct Dispatcher {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    observers: Vec<Arc<dyn Observer>>,
    /// One per observer: how many events its next batch takes (its writes are one
    /// transaction, which claims may be waiting behind).
    pacers: Arc<Vec<Pacer>>,
    lease: Lease,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.observers.iter().map(|o| o.name()).collect();
        f.debug_struct("Dispatcher")
            .field("observers", &names)
            .finish_non_exhaustive()
    }
}

impl Dispatcher {
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        observers: Vec<Arc<dyn Observer>>,
        holder: impl Into<String>,
    ) -> Self {
        Self::under_lease("dispatcher", store, clock, observers, holder)
    }

    /// A dispatcher under its own lease `name`, for observers that must not hold up the others
    /// (a broker that may be down waits its timeout in its own passes, not theirs).
    pub fn under_lease(
        name: &'static str,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        observers: Vec<Arc<dyn Observer>>,
        holder: impl Into<String>,
    ) -> Self {
        let pacers = observers
            .iter()
            .map(|_| Pacer::new(Duration::ZERO, BATCH))
            .collect();
        Dispatcher {
            store,
            clock,
            observers,
            pacers: Arc::new(pacers),
            lease: Lease::new(name, holder, LEASE),
        }
    }

    /// Sizes each observer's batches so that its transaction takes about `target` (zero:
    /// batches of 1,000 events).
    pub fn paced(mut self, target: Duration) -> Self {
        self.pacers = Arc::new(
            self.observers
                .iter()
                .map(|_| Pacer::new(target, BATCH))
                .collect(),
        );
        self
    }

    /// One pass: each observer gets the next batch after its position. Returns how many
    /// events were handed out (0 when every observer is up to date, or without the lease).
    ///
    /// The outbox is read once per pass, from the position of the observer furthest behind
    /// (observers are usually level), and each observer gets its part of it: during a rush
    /// every event is loaded and decoded once, not once per observer. An observer ahead of
    /// that window reads its own batch.
    ///
    /// Observers are isolated: one that fails is logged and left at its position, and the
    /// others still get their batches in the same pass. The pass answers the first error only
    /// when it handed out nothing else, so the loop backs off once the healthy ones are level.
    pub async fn run_once(&self) -> StoreResult<usize> {
        let now = self.clock.now();
        if !self.lease.hold(self.store.as_ref(), now).await? {
            return Ok(0);
        }
        let mut at = Vec::with_capacity(self.observers.len());
        for o in &self.observers {
            at.push(self.store.sink_position(o.name()).await?);
        }
        let (Some(&from), Some(size)) =
            (at.iter().min(), self.pacers.iter().map(Pacer::size).max())
        else {
            return Ok(0);
        };
        let events = self.store.outbox_read(from, size).await?;
        let window_full = events.len() >= size as usize;
        let (mut handed, mut failed, mut acks) = (0, None, Vec::new());
        for ((o, pacer), pos) in self.observers.iter().zip(self.pacers.iter()).zip(at) {
            let skip = events.partition_point(|e| position(e) <= pos);
            let result = if skip == events.len() && window_full {
                match self.store.outbox_read(pos, pacer.size()).await {
                    Ok(own) => Self::hand(o.as_ref(), pacer, &own).await,
                    Err(e) => Err(e),
                }
            } else {
                let mine = &events[skip..(skip + pacer.size() as usize).min(events.len())];
                Self::hand(o.as_ref(), pacer, mine).await
            };
            match result {
                Ok(Some((n, last))) => {
                    handed += n;
                    acks.push((o.name(), last));
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(observer = o.name(), error = %e.chain(), "an outbox observer failed; the others go on");
                    failed.get_or_insert(e);
                }
            }
        }
        // One commit moves every observer that handled its batch: a commit per observer would
        // be as many durable writes per pass, each waiting behind claims for the one writer.
        // If it fails, they all see their batches again (delivery is at least once).
        self.store.sink_ack(&acks).await?;
        match failed {
            Some(e) if handed == 0 => Err(e),
            _ => Ok(handed),
        }
    }

    /// Hands `mine` to `o`: how many, and the position to acknowledge (none if `mine` is empty).
    async fn hand(
        o: &dyn Observer,
        pacer: &Pacer,
        mine: &[Event],
    ) -> StoreResult<Option<(usize, OutboxPosition)>> {
        let Some(last) = mine.last() else {
            return Ok(None);
        };
        let started = std::time::Instant::now();
        o.handle(mine).await?;
        pacer.record(mine.len() as u32, started.elapsed());
        Ok(Some((mine.len(), position(last))))
    }

    /// Passes until every observer is up to date.
    pub async fn drain(&self) -> StoreResult<usize> {
        let mut total = 0;
        loop {
            let n = self.run_once().await?;
            total += n;
            if n == 0 {
                return Ok(total);
            }
        }
    }
}

#[async_trait]
impl Worker for Dispatcher {
    fn name(&self) -> &'static str {
        "dispatcher"
    }

    async fn pass(&self) -> StoreResult<Pass> {
        Ok(match self.run_once().await? {
            0 => Pass::Idle(IDLE),
            _ => Pass::Busy,
        })
    }

    fn retry_after(&self) -> Duration {
        IDLE
    }
}

/// Where `e` sits in the outbox.
fn position(e: &Event) -> OutboxPosition {
    OutboxPosition {
        txid: e.txid,
        event_id: e.id,
    }
}

/// What a coupon event says about its coupon.
pub(crate) struct CouponFacts {
    pub user: UserId,
    pub template: TemplateId,
    pub valid_until: Timestamp,
}

pub(crate) fn coupon_facts(e: &Event) -> Option<CouponFacts> {
    let user = UserId::parse(e.body.get("user_id")?.as_str()?).ok()?;
    let template = TemplateId::new(e.body.get("template_id")?.as_i64()?).ok()?;
    let valid_until = Timestamp::parse(e.body.get("valid_until")?.as_str()?).ok()?;
    Some(CouponFacts {
        user,
        template,
        valid_until,
    })
}

/// Plans a reminder a claimed or issued coupon's template's lead (`reminder_days_before`, or
/// the service's) before it expires (one per user, template and expiry day), and cancels it when the coupon is used or expires first (unless the user
/// holds another coupon of the template expiring that day).
///
/// Days are local: the day a coupon expires on, and the days of the lead, are counted in the
/// user's own zone when it is known, else the platform's. With a local hour (`at`), the
/// reminder goes at that hour of the lead's first day; without one, exactly the lead before
/// the expiry.
#[derive(Debug)]
pub struct ReminderPlanner {
    store: Arc<dyn Store>,
    before: time::Duration,
    zone: Zone,
    at: Option<(u32, u32)>,
}

impl ReminderPlanner {
    /// `days_before`: the lead of templates that set none of their own. Days in UTC until
    /// [`ReminderPlanner::local`] says otherwise.
    pub fn new(store: Arc<dyn Store>, days_before: u32) -> Self {
        ReminderPlanner {
            store,
            before: time::Duration::days(i64::from(days_before)),
            zone: Zone::UTC,
            at: None,
        }
    }

    /// Counts days in `zone` (users without their own), and sends at local `at` (hour,
    /// minute) when given.
    pub fn local(mut self, zone: Zone, at: Option<(u32, u32)>) -> Self {
        self.zone = zone;
        self.at = at;
        self
    }

    /// The zones of those of `events`' users who set their own.
    async fn zones(&self, events: &[Event]) -> StoreResult<HashMap<UserId, Zone>> {
        let mut users: Vec<UserId> = events
            .iter()
            .filter(|e| {
                matches!(
                    e.kind.as_str(),
                    kind::COUPON_CLAIMED
                        | kind::COUPON_ISSUED
                        | kind::COUPON_USED
                        | kind::COUPON_EXPIRED
                )
            })
            .filter_map(coupon_facts)
            .map(|f| f.user)
            .collect();
        if users.is_empty() {
            return Ok(HashMap::new());
        }
        users.sort();
        users.dedup();
        Ok(self
            .store
            .contacts(&users)
            .await?
            .into_iter()
            .filter_map(|c| Some((c.user_id, c.contact.zone?)))
            .collect())
    }

    /// The reminder of a coupon `f` with lead `lead`, in `zone`; `None` when it would be due
    /// before `now` (a coupon valid for less than the lead).
    fn plan(
        &self,
        f: &CouponFacts,
        lead: time::Duration,
        zone: &Zone,
        now: Timestamp,
    ) -> Option<Reminder> {
        let day = zone.day_of(f.valid_until);
        let expiring =
            coupond_domain::Window::new(zone.day_start(day)?, zone.day_start(day + 1)?).ok()?;
        let due_at = match self.at {
            Some((h, m)) => zone.at(day - lead.whole_days(), h, m)?,
            None => f.valid_until.minus(lead),
        };
        (due_at > now).then(|| Reminder {
            user_id: f.user.clone(),
            template_id: f.template,
            day,
            expiring,
            due_at,
        })
    }

    /// How long before expiry template `t`'s holders are reminded: its own
    /// `reminder_days_before`, or the service's. Read once per template and batch (`known`).
    async fn lead(
        &self,
        t: TemplateId,
        known: &mut HashMap<TemplateId, time::Duration>,
    ) -> StoreResult<time::Duration> {
        if let Some(d) = known.get(&t) {
            return Ok(*d);
        }
        let lead = match self.store.template(t).await {
            Ok(found) => found
                .spec
                .reminder_days_before
                .map_or(self.before, |d| time::Duration::days(i64::from(d))),
            // Deleted since (a draft never claimed cannot be): the service's lead.
            Err(coupond_store::StoreError::NotFound) => self.before,
            Err(e) => return Err(e),
        };
        known.insert(t, lead);
        Ok(lead)
    }
}

#[async_trait]
impl Observer for ReminderPlanner {
    fn name(&self) -> &str {
        sinks::REMINDERS
    }

    async fn handle(&self, events: &[Event]) -> StoreResult<()> {
        let mut plan = Vec::new();
        let mut leads = HashMap::new();
        let zones = self.zones(events).await?;
        for e in events {
            let Some(f) = coupon_facts(e) else { continue };
            let zone = zones.get(&f.user).unwrap_or(&self.zone);
            match e.kind.as_str() {
                kind::COUPON_CLAIMED | kind::COUPON_ISSUED => {
                    let lead = self.lead(f.template, &mut leads).await?;
                    // A coupon valid for less than the notice period gets no reminder.
                    plan.extend(self.plan(&f, lead, zone, e.at));
                }
                kind::COUPON_USED | kind::COUPON_EXPIRED => {
                    // Planned ones first, so a batch holding both the claim and the use ends
                    // without the reminder. (Should the user's zone have changed since it was
                    // planned, the reminder stays; sending it finds no coupon and drops it.)
                    self.store
                        .plan_reminders(&std::mem::take(&mut plan))
                        .await?;
                    self.store
                        .cancel_reminder(&f.user, f.template, zone.day_of(f.valid_until))
                        .await?;
                }
                _ => {}
            }
        }
        self.store.plan_reminders(&plan).await
    }
}
