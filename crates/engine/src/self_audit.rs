//! The self-audit in the background (issue 34): the invariant checks `coupond audit` runs by
//! hand ([`ReportStore::audit`](coupond_store::ReportStore::audit)), run every day at
//! `background.audit_at` (a time of day in `platform.time_zone`) and on demand, each run kept
//! with what it found ([`AuditRunStore`](coupond_store::AuditRunStore)).
//!
//! Any instance running at the day's instant queues that day's run (its slot is unique, so it
//! is queued once); only the instance holding the `audit` lease starts queued runs, one at a
//! time, so several instances never audit one database at once. The last scheduled run missed
//! while no instance was up is made up when one starts (once, and only on a database that had
//! scheduled runs before: a new one missed nothing); [`Auditor::request`] queues one now (the API's
//! `POST /v1/audits`, the console's "Run now") and wakes this process's loop; another
//! instance's loop finds it within [`POLL`]. A run that finds anything logs a warning and its
//! store write emits `audit.failed` (webhooks, NATS).
//!
//! The checks are reads (on SQLite, from the reader pool; elsewhere plain `SELECT`s): they
//! take no lock a claim waits for.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use coupond_domain::{Timestamp, Zone};
use coupond_store::audit::{self, Change};
use coupond_store::{AuditRun, AuditTrigger, Finding, RunEnd, Store, StoreResult};
use tokio::sync::Notify;

use crate::clock::Clock;
use crate::worker::{Lease, Pass, Worker};

/// How long past its deadline a lock may still be held (the sweeper runs every second)
/// before the audit counts it, as `coupond audit`'s default `--grace`.
pub const GRACE: time::Duration = time::Duration::minutes(1);

/// How often an idle loop looks for runs another instance queued.
pub const POLL: Duration = Duration::from_secs(30);

/// The lease, renewed by every pass and every [`RENEW`] while a run's checks go on: an
/// instance that stopped hands it over within this time.
const LEASE: time::Duration = time::Duration::seconds(60);

/// How often a run in progress renews the lease.
const RENEW: Duration = Duration::from_secs(20);

/// A run started this long ago and never finished belongs to an instance that died: it is
/// started again.
const STALE: time::Duration = time::Duration::hours(2);

/// A time of day, in a zone the caller names: `background.audit_at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeOfDay {
    /// Minutes since midnight.
    minutes: i64,
}

impl TimeOfDay {
    /// `HH:MM`, 00:00 to 23:59.
    pub fn parse(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?} is not a time of day: HH:MM, 00:00 to 23:59, or off");
        let (h, m) = s.split_once(':').ok_or_else(bad)?;
        let digits = |p: &str| p.len() == 2 && p.bytes().all(|b| b.is_ascii_digit());
        if !digits(h) || !digits(m) {
            return Err(bad());
        }
        let (h, m): (i64, i64) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
        if h > 23 || m > 59 {
            return Err(bad());
        }
        Ok(TimeOfDay {
            minutes: h * 60 + m,
        })
    }

    /// The hour and minute.
    pub fn hour_minute(self) -> (u32, u32) {
        ((self.minutes / 60) as u32, (self.minutes % 60) as u32)
    }

    /// The last instant at this local time of day in `zone` at or before `now` (a time a
    /// clock change skips moves past the gap, as [`Zone::at`] says).
    pub fn last_at_or_before(self, now: Timestamp, zone: Zone) -> Timestamp {
        let (h, m) = self.hour_minute();
        let day = zone.day_of(now);
        [day, day - 1, day - 2]
            .into_iter()
            .filter_map(|d| zone.at(d, h, m))
            .find(|at| *at <= now)
            .unwrap_or(now)
    }

    /// The first instant at this local time of day in `zone` after `now`.
    pub fn next_after(self, now: Timestamp, zone: Zone) -> Timestamp {
        let (h, m) = self.hour_minute();
        let day = zone.day_of(now);
        [day, day + 1, day + 2]
            .into_iter()
            .filter_map(|d| zone.at(d, h, m))
            .find(|at| *at > now)
            .unwrap_or_else(|| now.plus(time::Duration::days(1)))
    }
}

impl std::fmt::Display for TimeOfDay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:02}:{:02}", self.minutes / 60, self.minutes % 60)
    }
}

/// What one pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Whether this instance held the lease (if not, it queued at most the day's run).
    pub leader: bool,
    /// The run it made, finished.
    pub finished: Option<AuditRun>,
}

/// The background audit. Cheap to clone; clones share their wake-up, so the API's copy wakes
/// the loop `serve` runs.
#[derive(Clone)]
pub struct Auditor {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    at: Option<TimeOfDay>,
    /// The zone `at` is read in (`platform.time_zone`).
    zone: Zone,
    lease: Lease,
    wake: Arc<Notify>,
    /// When this process started: the days' instants from then on are its to queue, and the
    /// last one before it is made up if it was missed.
    from: Timestamp,
    /// The last slot this process queued (or found queued), so it asks once per day.
    queued: Arc<Mutex<Option<Timestamp>>>,
}

impl std::fmt::Debug for Auditor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auditor")
            .field("at", &self.at)
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

impl Auditor {
    /// Runs every day at `at` (`None`: only on request); `holder` names this instance in the
    /// lease.
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        at: Option<TimeOfDay>,
        holder: impl Into<String>,
    ) -> Self {
        let from = clock.now();
        Auditor {
            store,
            clock,
            at,
            zone: Zone::UTC,
            lease: Lease::new("audit", holder, LEASE),
            wake: Arc::default(),
            from,
            queued: Arc::default(),
        }
    }

    /// The same auditor, reading its time of day in `zone`.
    pub fn in_zone(mut self, zone: Zone) -> Self {
        self.zone = zone;
        self
    }

    /// The same auditor, holding the lease as `holder` (its wake-up still shared).
    pub fn holder(mut self, holder: impl Into<String>) -> Self {
        self.lease = Lease::new("audit", holder, LEASE);
        self
    }

    /// When it runs by itself: the time of day, if at all, and the zone it is read in.
    pub fn schedule(&self) -> Option<(TimeOfDay, Zone)> {
        self.at.map(|at| (at, self.zone))
    }

    /// Queues a run now (recorded in the audit trail as `audit_run.request`, by whoever is
    /// acting) and wakes this process's loop: the run, queued.
    pub async fn request(&self) -> StoreResult<AuditRun> {
        let now = self.clock.now();
        let change = Change::new("audit_run.request", "audit_run", now);
        let queue = self.store.queue_audit_run(AuditTrigger::Manual, None, now);
        let run = audit::change(change, queue)
            .await?
            .ok_or_else(|| coupond_store::StoreError::other("a manual run was not queued"))?;
        self.wake.notify_one();
        Ok(run)
    }

    /// One pass at the clock's now: queues the day's run once its instant came (while this
    /// process ran), then, holding the lease, makes the oldest queued run.
    pub async fn run_once(&self) -> StoreResult<Outcome> {
        let now = self.clock.now();
        self.queue_due(now).await?;
        if !self.lease.hold(self.store.as_ref(), now).await? {
            return Ok(Outcome::default());
        }
        let Some(run) = self.store.start_audit_run(now.minus(STALE), now).await? else {
            return Ok(Outcome {
                leader: true,
                finished: None,
            });
        };
        let finished = self.make(&run).await?;
        Ok(Outcome {
            leader: true,
            finished: Some(finished),
        })
    }

    async fn queue_due(&self, now: Timestamp) -> StoreResult<()> {
        let Some(at) = self.at else { return Ok(()) };
        let slot = at.last_at_or_before(now, self.zone);
        let done = *self.queued.lock().unwrap_or_else(PoisonError::into_inner) == Some(slot);
        if done {
            return Ok(());
        }
        if slot >= self.from || self.missed(slot).await? {
            self.store
                .queue_audit_run(AuditTrigger::Scheduled, Some(slot), now)
                .await?;
        }
        *self.queued.lock().unwrap_or_else(PoisonError::into_inner) = Some(slot);
        Ok(())
    }

    /// Whether `slot`, an instant before this process started, is a scheduled run missed: the
    /// database had scheduled runs, all of them before `slot` (its own run, queued by an
    /// instance that was up then, makes it not missed; a database that never had one missed
    /// nothing).
    async fn missed(&self, slot: Timestamp) -> StoreResult<bool> {
        let runs = self.store.audit_runs(None, 100).await?;
        let last = runs
            .iter()
            .filter(|r| r.trigger == AuditTrigger::Scheduled)
            .filter_map(|r| r.slot)
            .max();
        Ok(last.is_some_and(|last| last < slot))
    }

    /// Runs the checks of started run `run` and records what they found.
    async fn make(&self, run: &AuditRun) -> StoreResult<AuditRun> {
        let started = std::time::Instant::now();
        let checked = self
            .while_holding(self.store.audit(self.clock.now(), GRACE))
            .await;
        let now = self.clock.now();
        let finished = match &checked {
            Ok(found) => {
                let found: Vec<Finding> = found.iter().map(Finding::from).collect();
                let end = RunEnd::Checked(&found);
                self.store.finish_audit_run(run.id, end, now).await?
            }
            Err(e) => {
                let why = e.to_string();
                let end = RunEnd::Failed(&why);
                self.store.finish_audit_run(run.id, end, now).await?
            }
        };
        let took = started.elapsed();
        match (&checked, finished.violations) {
            (Ok(_), Some(0)) => {
                tracing::info!(run = finished.id, ?took, "the audit found nothing wrong")
            }
            (Ok(_), n) => tracing::warn!(
                run = finished.id,
                violations = n.unwrap_or_default(),
                ?took,
                "the audit found broken invariants (GET /v1/audits)"
            ),
            (Err(e), _) => tracing::warn!(run = finished.id, error = %e, "the audit could not run"),
        }
        Ok(finished)
    }

    /// Runs `work` while renewing the lease every [`RENEW`], so a long run keeps it and no
    /// other instance starts another run meanwhile.
    async fn while_holding<T>(&self, work: impl std::future::Future<Output = T>) -> T {
        tokio::pin!(work);
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + RENEW, RENEW);
        loop {
            tokio::select! {
                out = &mut work => return out,
                _ = tick.tick() => {
                    let now = self.clock.now();
                    if let Err(e) = self.lease.hold(self.store.as_ref(), now).await {
                        tracing::warn!(error = %e, "renewing the audit lease failed");
                    }
                }
            }
        }
    }

    /// How long an idle loop waits at `now`: until the day's instant, at most [`POLL`].
    fn idle_wait(&self, now: Timestamp) -> Duration {
        let until = self.at.map_or(POLL, |at| {
            let micros = at.next_after(now, self.zone).unix_micros() - now.unix_micros();
            Duration::from_micros(u64::try_from(micros).unwrap_or(0))
        });
        until.min(POLL)
    }
}

#[async_trait::async_trait]
impl Worker for Auditor {
    fn name(&self) -> &'static str {
        "audit"
    }

    /// A pass; at once again after a run (another may wait), else a wait of at most
    /// [`POLL`].
    async fn pass(&self) -> StoreResult<Pass> {
        Ok(match self.run_once().await?.finished {
            Some(_) => Pass::Busy,
            None => Pass::Idle(self.idle_wait(self.clock.now())),
        })
    }

    fn retry_after(&self) -> Duration {
        POLL
    }

    fn waker(&self) -> Option<&Notify> {
        Some(&self.wake)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    #[test]
    fn a_time_of_day_is_hh_mm_in_its_zone() {
        let at = TimeOfDay::parse("04:00").unwrap();
        let utc = Zone::UTC;
        assert_eq!(at.to_string(), "04:00");
        assert_eq!(
            at.last_at_or_before(t("2026-03-01T10:00:00Z"), utc),
            t("2026-03-01T04:00:00Z")
        );
        assert_eq!(
            at.last_at_or_before(t("2026-03-01T03:59:59Z"), utc),
            t("2026-02-28T04:00:00Z")
        );
        assert_eq!(
            at.last_at_or_before(t("2026-03-01T04:00:00Z"), utc),
            t("2026-03-01T04:00:00Z"),
            "at the instant itself"
        );
        assert_eq!(
            at.next_after(t("2026-03-01T04:00:00Z"), utc),
            t("2026-03-02T04:00:00Z")
        );
        // 04:00 in Shanghai (UTC+8) is 20:00 UTC the day before (issue 61 point 13).
        let shanghai = Zone::parse("Asia/Shanghai").unwrap();
        assert_eq!(
            at.last_at_or_before(t("2026-03-01T10:00:00Z"), shanghai),
            t("2026-02-28T20:00:00Z")
        );
        assert_eq!(
            at.next_after(t("2026-03-01T10:00:00Z"), shanghai),
            t("2026-03-01T20:00:00Z")
        );
        // New York moves its clocks at 02:00 on 2026-03-08: 04:00 local is 08:00 UTC after.
        let ny = Zone::parse("America/New_York").unwrap();
        assert_eq!(
            at.next_after(t("2026-03-07T10:00:00Z"), ny),
            t("2026-03-08T08:00:00Z")
        );
        assert_eq!(TimeOfDay::parse("23:59").unwrap().to_string(), "23:59");
        for bad in [
            "4:00", "24:00", "12:60", "noon", "", "04:00:00", "+4:00", "04-00",
        ] {
            assert!(TimeOfDay::parse(bad).is_err(), "{bad}");
        }
    }
}
