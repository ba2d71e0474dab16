//! Cache invalidation from the outbox: when a template changes status or sells out, this
//! process forgets its cached copy at once instead of waiting out `cache_ttl`.
//!
//! The cache is only a short cut (a claim's commit re-checks the template), so this is about
//! freshness, not correctness. It runs as one of the dispatcher's observers, which hold a lease:
//! with several instances it tells the others through [`App::tell`] (Redis), and without
//! Redis their caches expire by `cache_ttl`. This catches what the routes do not tell at once
//! themselves (status changes by the scheduler, sold-out events).

use async_trait::async_trait;
use coupond_domain::TemplateId;
use coupond_engine::shared::Notice;
use coupond_engine::Observer;
use coupond_store::events::kind;
use coupond_store::{Event, StoreResult};

use crate::context::App;

/// Forgets cached templates named by template events.
#[derive(Debug)]
pub struct CacheInvalidator {
    app: App,
}

impl CacheInvalidator {
    pub fn new(app: App) -> Self {
        CacheInvalidator { app }
    }
}

#[async_trait]
impl Observer for CacheInvalidator {
    fn name(&self) -> &str {
        coupond_engine::dispatch::sinks::CACHE
    }

    async fn handle(&self, events: &[Event]) -> StoreResult<()> {
        for e in events {
            if matches!(
                e.kind.as_str(),
                kind::TEMPLATE_STATUS_CHANGED | kind::TEMPLATE_SOLD_OUT | kind::TEMPLATE_CHANGED
            ) {
                if let Some(t) = e
                    .body
                    .get("template_id")
                    .and_then(|t| t.as_i64())
                    .and_then(|t| TemplateId::new(t).ok())
                {
                    let stock = e.body.get("total_stock").and_then(|s| s.as_i64());
                    let notice = match (e.kind.as_str(), stock) {
                        // Its stock may have been raised.
                        (kind::TEMPLATE_CHANGED, Some(stock)) => {
                            Notice::StockRaised { template: t, stock }
                        }
                        _ => Notice::TemplateChanged { template: t },
                    };
                    // Here and on every instance (the others hold no lease on the outbox).
                    self.app.tell(notice);
                }
            }
        }
        Ok(())
    }
}
