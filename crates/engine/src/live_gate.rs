//! [`LiveGate`]: before a template's first claims in this process, whatever its status went
//! through up to now (the window opening, say) is announced, so a claim's events never come
//! before the `template.status_changed` to `active` they depend on.
//!
//! The scheduler announces transitions as time makes them due, but it may be a second late
//! (it sleeps until the next boundary, under a lease another instance may hold); a claim in
//! that gap would otherwise commit its `coupon.claimed` first. The gate asks the store once
//! per template: once the announced status is `active` or later, nothing a claim writes can
//! precede it, and the template is remembered as open.

use std::collections::HashSet;
use std::sync::{PoisonError, RwLock};

use coupond_domain::{TemplateId, TemplateStatus, Timestamp};
use coupond_store::Store;

/// The templates whose `active` (or a later status) is known announced. The lock is a `std`
/// one, held only to read or insert one id, never across an await.
#[derive(Debug, Default)]
pub struct LiveGate {
    open: RwLock<HashSet<TemplateId>>,
}

impl LiveGate {
    /// Makes sure `t`'s transitions due at `now` are announced before claims of it commit.
    /// A store error is logged and the claims go on (the scheduler still announces it): event
    /// order must not cost availability.
    pub async fn pass(&self, store: &dyn Store, t: TemplateId, now: Timestamp) {
        if self.is_open(t) {
            return;
        }
        match store.announce_template_due(t, now).await {
            Ok(Some(
                TemplateStatus::Active
                | TemplateStatus::Ended
                | TemplateStatus::Expired
                | TemplateStatus::Aborted,
            )) => {
                self.open
                    .write()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(t);
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(template = %t, error = %e, "could not announce before a claim")
            }
        }
    }

    fn is_open(&self, t: TemplateId) -> bool {
        self.open
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&t)
    }
}
