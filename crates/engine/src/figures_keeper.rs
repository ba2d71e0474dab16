//! The figures keeper: counts the performance report's closed hours ahead of the people who
//! ask. The report keeps each whole hour once counted ([`performance::keep`]), so only the
//! first report of a scope reads the period's records; this loop makes that first report
//! someone else's. Each pass keeps the last [`KEEP_BACK`] of settled hours for the platform
//! and for every activity whose run started and ended less than [`KEEP_BACK`] ago, as the
//! platform asks for them (a merchant's view, a template or a merchant's report is still
//! counted on its first request, then kept), then sleeps until the next hour settles. After
//! the first pass each one counts one new hour per scope.
//!
//! One instance runs it at a time (the `figures` lease); two counting the same hour would
//! only keep the same rows twice over (`keep_figures` inserts each row once).

use std::sync::Arc;
use std::time::Duration;

use coupond_domain::{ActivityId, Timestamp};
use coupond_store::{ActivityQuery, Page, Store, StoreResult};

use crate::clock::Clock;
use crate::performance::{self, floor_hour, Asked, Scope, SETTLE};
use crate::worker::{Lease, Pass, Worker};

/// How far back the keeper keeps hours: a month's report (the console's default period is
/// the last 30 days) finds every closed hour kept.
pub const KEEP_BACK: time::Duration = time::Duration::days(31);

/// How long the lease lasts; renewed before each scope.
const LEASE: time::Duration = time::Duration::minutes(5);

/// Activities listed per page.
const PAGE: u32 = 500;

/// The keeper. Cheap to clone.
#[derive(Clone)]
pub struct FiguresKeeper {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    lease: Lease,
}

impl std::fmt::Debug for FiguresKeeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FiguresKeeper").finish_non_exhaustive()
    }
}

impl FiguresKeeper {
    /// `holder` names this instance in the lease.
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, holder: impl Into<String>) -> Self {
        FiguresKeeper {
            store,
            clock,
            lease: Lease::new("figures", holder, LEASE),
        }
    }

    /// Keeps every settled hour of the last [`KEEP_BACK`] for the platform and the recent
    /// activities; the scopes kept, or `None` if another instance holds the lease.
    pub async fn run_once(&self) -> StoreResult<Option<usize>> {
        let now = self.clock.now();
        let store = self.store.as_ref();
        let (first, last) = (
            floor_hour(now.minus(KEEP_BACK)),
            floor_hour(now.minus(SETTLE)),
        );
        let mut scopes = vec![Scope::Platform];
        scopes.extend(
            recent_activities(store, first, now)
                .await?
                .into_iter()
                .map(Scope::Activity),
        );
        for &scope in &scopes {
            if !self.lease.hold(store, self.clock.now()).await? {
                return Ok(None);
            }
            let covered = performance::covered(store, scope, None, now).await?;
            let asked = Asked {
                scope,
                only: None,
                covered: &covered,
            };
            performance::keep(store, asked, (first, last), now).await?;
        }
        Ok(Some(scopes.len()))
    }
}

/// Activities whose run started by `now` and ended at or after `since`.
async fn recent_activities(
    store: &dyn Store,
    since: Timestamp,
    now: Timestamp,
) -> StoreResult<Vec<ActivityId>> {
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .list_activities(&ActivityQuery {
                status: None,
                city: None,
                any_city: None,
                now,
                freeze: time::Duration::ZERO,
                narrow: Default::default(),
                page: Page { after, limit: PAGE },
            })
            .await?;
        out.extend(
            page.iter()
                .filter(|a| a.spec.run.start <= now && a.spec.run.end >= since)
                .map(|a| a.id),
        );
        match page.last() {
            Some(a) if page.len() == PAGE as usize => after = Some(a.id.get()),
            _ => return Ok(out),
        }
    }
}

#[async_trait::async_trait]
impl Worker for FiguresKeeper {
    fn name(&self) -> &'static str {
        "figures keeper"
    }

    async fn pass(&self) -> StoreResult<Pass> {
        let kept = self.run_once().await?;
        if let Some(n) = kept {
            tracing::debug!(scopes = n, "figures kept");
        }
        // The next hour settles SETTLE after it ends; a few seconds later, so its last
        // writes are in. Without the lease, look again then too.
        let now = self.clock.now();
        let next = floor_hour(now.minus(SETTLE)).plus(time::Duration::hours(1) + SETTLE);
        let wait = (next.unix_micros() - now.unix_micros()).max(0) as u64;
        Ok(Pass::Idle(
            Duration::from_micros(wait) + Duration::from_secs(5),
        ))
    }

    fn retry_after(&self) -> Duration {
        Duration::from_secs(60)
    }
}
