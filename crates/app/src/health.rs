//! Whether this instance can serve ([`App::readiness`]) and the figures operators alert on,
//! read at scrape time so every instance reports the same ([`App::record_gauges`]).

use std::collections::BTreeMap;

use coupond_domain::Timestamp;
use coupond_engine::supervise::WorkerRestarts;
use coupond_engine::telemetry as t;
use coupond_store::AuditRun;

use crate::context::App;
use crate::error::AppResult;

/// What `/readyz` reports: the database answered.
#[derive(Debug)]
pub struct Readiness {
    /// The storage backend (`sqlite`, `postgres`, `mysql`).
    pub database: &'static str,
    /// Background loops that panicked and were restarted, by name.
    pub restarted: BTreeMap<&'static str, WorkerRestarts>,
    /// The self-audit's last run that finished its checks, if any has.
    pub last_audit: Option<FinishedAudit>,
}

/// A self-audit run that finished its checks.
#[derive(Clone, Copy, Debug)]
pub struct FinishedAudit {
    pub run_id: i64,
    pub finished_at: Timestamp,
    /// Broken invariants it found.
    pub violations: i64,
}

impl FinishedAudit {
    fn of(run: AuditRun) -> Option<Self> {
        Some(FinishedAudit {
            run_id: run.id,
            finished_at: run.finished_at?,
            violations: run.violations?,
        })
    }
}

impl App {
    /// Whether the database answers, with the loops restarted and the last audit. Broken
    /// invariants do not make the instance unready: they are the database's, not this
    /// instance's.
    pub async fn readiness(&self) -> AppResult<Readiness> {
        self.store().ping().await?;
        let last_audit = self
            .store()
            .last_audit_run()
            .await?
            .and_then(FinishedAudit::of);
        Ok(Readiness {
            database: self.store().backend(),
            restarted: self.workers().restarted(),
            last_audit,
        })
    }

    /// Sets the gauges read at scrape time: the pool, the outbox consumers' lag, the last
    /// audit, and the figures of [`App::record_domain_gauges`] (`database_up` says whether
    /// they could be read).
    pub async fn record_gauges(&self) {
        let pool = self.store().pool_stats();
        let backend = self.store().backend();
        metrics::gauge!("db_pool_connections", "backend" => backend).set(f64::from(pool.size));
        metrics::gauge!("db_pool_idle_connections", "backend" => backend).set(f64::from(pool.idle));
        metrics::gauge!("db_pool_max_connections", "backend" => backend).set(f64::from(pool.max));
        // Up to 1,000 events per consumer, so it is right on every instance.
        if let Ok(lags) = self.outbox_lags().await {
            for l in lags {
                metrics::gauge!(t::OUTBOX_BACKLOG, "consumer" => l.consumer)
                    .set(f64::from(l.behind));
            }
        }
        // Before any run finished, the values registered at start stand (0 found, last run
        // at 0).
        if let Ok(Some(found)) = self
            .store()
            .last_audit_run()
            .await
            .map(|r| r.and_then(FinishedAudit::of))
        {
            metrics::gauge!(t::AUDIT_VIOLATIONS).set(found.violations as f64);
            let at = found.finished_at.unix_micros() as f64 / 1e6;
            metrics::gauge!(t::AUDIT_LAST_RUN).set(at);
        }
        let up = self.record_domain_gauges().await.is_ok();
        metrics::gauge!(t::DATABASE_UP).set(if up { 1.0 } else { 0.0 });
    }

    /// Templates claimable, sold out and low; the largest share of a budget spent; locks
    /// about to end. An error means the database could not be read.
    async fn record_domain_gauges(&self) -> AppResult<()> {
        let now = self.now();
        let standing = self.store().standing(None, now).await?;
        metrics::gauge!(t::TEMPLATES_CLAIMABLE).set(standing.claimable as f64);
        metrics::gauge!(t::TEMPLATES_SOLD_OUT).set(standing.sold_out as f64);
        metrics::gauge!(t::TEMPLATES_LOW_STOCK).set(standing.low_stock as f64);
        let soon = now.plus(time::Duration::minutes(5));
        let expiring = self.store().locks_due_before(soon).await?;
        metrics::gauge!(t::LOCKS_EXPIRING_SOON).set(expiring as f64);
        // 0 while no active template has a budget: nothing is near its end.
        let share = self.shelf().await?.budget_used_max(now).unwrap_or(0.0);
        metrics::gauge!(t::BUDGET_USED_RATIO_MAX).set(share);
        Ok(())
    }
}
