//! The scheduler: one loop (a lease in the database makes it one across instances) that
//! materialises what time makes due.
//!
//! Each step, at the clock's `now`:
//! - announces every status transition of activities and templates since the last one
//!   announced, each as an event at the instant it happened, oldest first (after downtime,
//!   every boundary passed, in order);
//! - marks unused coupons whose validity ended expired (`coupon.expired`);
//! - ends locks past their deadline (as the [`Sweeper`] does);
//! - sends due reminders.
//!
//! Every write is conditional on what was read (the announced status, the coupon still
//! unused, the lock still held, the reminder still there), so a step repeated, or run by two
//! instances during a lease hand-over, writes each transition once.
//!
//! [`Scheduler::run_once`] is the step tests call with a manual clock; [`Scheduler::run`]
//! loops until shutdown, sleeping until the next due instant (at most [`MAX_SLEEP`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use coupond_domain::messaging::MessageKind;
use coupond_domain::{Template, TemplateId, Timestamp, UserId};
use coupond_store::{ContactRecord, Due, MessageContent, Reminder, Store, StoreResult};

use crate::checkout::Sweeper;
use crate::clock::Clock;
use crate::messaging::texts::{coupon_vars, Reading, Texts};
use crate::messaging::{contacts_by_user, templates_by_id, Readers};
use crate::worker::{Lease, Pass, Worker};

/// Rows handled per transaction.
const BATCH: u32 = 500;

/// The longest the loop sleeps: records created meanwhile (a template published, a coupon
/// claimed) are picked up at most this late.
pub const MAX_SLEEP: Duration = Duration::from_secs(1);

/// How long a lease lasts; the holder renews it every step.
const LEASE: time::Duration = time::Duration::seconds(10);

/// What one step did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Whether this instance held the lease (if not, it did nothing).
    pub leader: bool,
    pub due: Due,
}

/// The scheduler. Cheap to clone.
#[derive(Clone)]
pub struct Scheduler {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    freeze: time::Duration,
    lease: Lease,
    /// The zone and locale of reminders to users without their own.
    readers: Readers,
    /// The instant the last pass said the next one was due, to measure how late it ran. A
    /// lock, not a field of `&mut self`: passes run through `&self` (the worker shape); shared
    /// by clones, which are the same scheduler.
    due_at: Arc<std::sync::Mutex<Option<Timestamp>>>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

impl Scheduler {
    /// `freeze` is the activities' freeze period; `holder` names this instance in the lease.
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        freeze: time::Duration,
        holder: impl Into<String>,
    ) -> Self {
        Scheduler {
            store,
            clock,
            freeze,
            lease: Lease::new("scheduler", holder, LEASE),
            readers: Readers::default(),
            due_at: Arc::default(),
        }
    }

    /// Reminders to users without a zone and locale of their own read in `readers`' (UTC
    /// and English until said).
    pub fn readers(self, readers: Readers) -> Self {
        Scheduler { readers, ..self }
    }

    /// One step at the clock's now.
    pub async fn run_once(&self) -> StoreResult<Outcome> {
        let now = self.clock.now();
        if !self.lease.hold(self.store.as_ref(), now).await? {
            return Ok(Outcome::default());
        }
        let mut due = Due::default();
        for (a, announced) in self.store.unannounced_activities().await? {
            let moves = a.transitions_since(announced, now, self.freeze);
            if !moves.is_empty()
                && self
                    .store
                    .announce_activity(a.id, announced, &moves)
                    .await?
            {
                due.transitions += moves.len();
            }
        }
        loop {
            let batch = self.store.due_templates(now, BATCH).await?;
            let mut progressed = false;
            for (t, announced) in &batch {
                let moves = t.transitions_since(*announced, now);
                if !moves.is_empty()
                    && self
                        .store
                        .announce_template(t.id, *announced, &moves)
                        .await?
                {
                    due.transitions += moves.len();
                    progressed = true;
                }
            }
            if batch.len() < BATCH as usize || !progressed {
                break;
            }
        }
        loop {
            let n = self.store.expire_coupons(now, BATCH).await?;
            due.coupons_expired += n;
            if n < u64::from(BATCH) {
                break;
            }
        }
        due.locks_expired = Sweeper::new(self.store.clone(), self.clock.clone())
            .run_once()
            .await?
            .len();
        due.reminders = self.send_reminders(now).await?;
        Ok(Outcome { leader: true, due })
    }

    async fn send_reminders(&self, now: Timestamp) -> StoreResult<usize> {
        let mut sent = 0;
        loop {
            let batch = self.store.due_reminders(now, BATCH).await?;
            if batch.is_empty() {
                return Ok(sent);
            }
            let texts = Texts::load(&self.store, &self.readers.locale).await?;
            let (templates, contacts) = self.about(&batch).await?;
            for r in &batch {
                let reading = texts.for_reader(
                    MessageKind::CouponExpiring,
                    contacts.get(&r.user_id),
                    &self.readers,
                );
                let content = reminder_text(r, templates.get(&r.template_id), &reading, now);
                self.store.send_reminder(r, &content, now).await?;
                sent += 1;
            }
            if batch.len() < BATCH as usize {
                return Ok(sent);
            }
        }
    }

    /// The templates and the users' contact records of `batch`.
    async fn about(
        &self,
        batch: &[Reminder],
    ) -> StoreResult<(
        HashMap<TemplateId, Template>,
        HashMap<UserId, ContactRecord>,
    )> {
        let store = self.store.as_ref();
        let templates = templates_by_id(store, batch.iter().map(|r| r.template_id)).await?;
        let contacts = contacts_by_user(store, batch.iter().map(|r| r.user_id.clone())).await?;
        Ok((templates, contacts))
    }
}

/// The inbox text of reminder `r`, in the reader's locale: its day is the reminder's own
/// local day, and the days left are counted to that day's start.
fn reminder_text(
    r: &Reminder,
    t: Option<&Template>,
    reading: &Reading,
    now: Timestamp,
) -> MessageContent {
    let mut vars = coupon_vars(t, None, &reading.locale, &reading.zone);
    vars.insert("valid_until", day_text(r.day));
    let ahead = r.expiring.start.unix_micros() - now.unix_micros();
    let day = 86_400_000_000;
    let days_left = (ahead.max(0) + day - 1) / day;
    vars.insert("days_left", days_left.to_string());
    let filled = reading.text.render(&vars);
    MessageContent {
        // Stored once per key: everything the text is filled with is in it.
        key: format!(
            "reminder:{}:{}:{}:{days_left}",
            r.template_id, r.day, reading.locale
        ),
        kind: "reminder".into(),
        title: filled.subject,
        body: filled.body,
    }
}

#[async_trait::async_trait]
impl Worker for Scheduler {
    fn name(&self) -> &'static str {
        "scheduler"
    }

    /// A step, then a wait until the next due instant, at most [`MAX_SLEEP`].
    async fn pass(&self) -> StoreResult<Pass> {
        let due = self.due_at.lock().map(|mut d| d.take()).unwrap_or(None);
        if let Some(due) = due {
            let late = self.clock.now().unix_micros() - due.unix_micros();
            metrics::histogram!(crate::telemetry::SCHEDULER_LAG_SECONDS)
                .record(late.max(0) as f64 / 1e6);
        }
        self.run_once().await?;
        let now = self.clock.now();
        let next = self.store.next_due(now).await?;
        let wait = match next {
            Some(next) => Duration::from_micros(
                u64::try_from(next.unix_micros() - now.unix_micros()).unwrap_or(0),
            ),
            None => MAX_SLEEP,
        };
        if let (Some(next), Ok(mut d)) = (next.filter(|_| wait <= MAX_SLEEP), self.due_at.lock()) {
            *d = Some(next);
        }
        Ok(Pass::Idle(wait.min(MAX_SLEEP)))
    }

    fn retry_after(&self) -> Duration {
        MAX_SLEEP
    }
}

/// `day` (days since 1970-01-01) as `YYYY-MM-DD`.
fn day_text(day: i64) -> String {
    Timestamp::from_unix_micros(day * 86_400_000_000)
        .map(|t| t.to_string().chars().take(10).collect())
        .unwrap_or_default()
}
