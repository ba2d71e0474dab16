//! Application state: read-only after start and cheap to clone (one `Arc`).

use std::sync::Arc;

use coupond_domain::Timestamp;
use coupond_engine::{ClaimEngine, ClaimMode, Clock};
use coupond_store::Store;

use crate::auth::{JwtKeys, Principal};
use crate::cache::TtlCache;
use crate::ratelimit::{Rate, RateLimits};
use coupond_domain::{Template, TemplateId};
use coupond_store::StoreError;

/// Settings the API reads on every request.
#[derive(Clone, Debug)]
pub struct ApiSettings {
    /// Activities freeze this long before they start (and at the end of enrollment).
    pub freeze: time::Duration,
    /// Largest accepted request body, bytes.
    pub max_body_bytes: usize,
    /// Page size when a list request gives no `limit`.
    pub default_page: u32,
    /// Largest `limit` a list request may ask for.
    pub max_page: u32,
    /// How many templates one listing may have bound at once.
    pub max_bindings_per_listing: u32,
    /// Group commit (the default) or one transaction per claim.
    pub claim_mode: ClaimMode,
    /// Claims per user (whoever sends them). Off by default here; `coupond serve` turns it on.
    pub claim_rate_per_user: Rate,
    /// Claims per client IP, for requests with user tokens. Off by default here.
    pub claim_rate_per_ip: Rate,
    /// How long API keys and claimed templates are cached in memory (zero: not at all). A
    /// key revoked by another process stops working within this time.
    pub cache_ttl: std::time::Duration,
}

impl Default for ApiSettings {
    fn default() -> Self {
        ApiSettings {
            freeze: time::Duration::minutes(5),
            max_body_bytes: 64 * 1024,
            default_page: 50,
            max_page: 200,
            max_bindings_per_listing: 3,
            claim_mode: ClaimMode::default(),
            claim_rate_per_user: Rate::OFF,
            claim_rate_per_ip: Rate::OFF,
            cache_ttl: std::time::Duration::ZERO,
        }
    }
}

/// Everything a handler needs, shared by all requests.
#[derive(Clone, Debug)]
pub struct AppState {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    jwt: JwtKeys,
    claims: ClaimEngine,
    rate_limits: RateLimits,
    keys: TtlCache<[u8; 32], Principal>,
    templates: TtlCache<TemplateId, Arc<Template>>,
    settings: ApiSettings,
}

impl AppState {
    /// `jwt_secret` signs and verifies user tokens.
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        jwt_secret: &[u8],
        settings: ApiSettings,
    ) -> Self {
        let claims = ClaimEngine::new(store.clone(), clock.clone(), settings.claim_mode);
        AppState {
            inner: Arc::new(Inner {
                store,
                clock,
                jwt: JwtKeys::new(jwt_secret),
                claims,
                rate_limits: RateLimits::new(
                    settings.claim_rate_per_user,
                    settings.claim_rate_per_ip,
                ),
                keys: TtlCache::new(settings.cache_ttl, 100_000),
                templates: TtlCache::new(settings.cache_ttl, 10_000),
                settings,
            }),
        }
    }

    pub fn store(&self) -> &dyn Store {
        self.inner.store.as_ref()
    }

    pub fn now(&self) -> Timestamp {
        self.inner.clock.now()
    }

    pub fn jwt(&self) -> &JwtKeys {
        &self.inner.jwt
    }

    /// The claim engine; `serve` shuts it down (draining queued claims) after the server.
    pub fn claims(&self) -> &ClaimEngine {
        &self.inner.claims
    }

    /// Principals of recently seen API keys, by key hash.
    pub fn key_cache(&self) -> &TtlCache<[u8; 32], Principal> {
        &self.inner.keys
    }

    /// A template as read at most `cache_ttl` ago (for the claim path).
    pub async fn claimed_template(&self, id: TemplateId) -> Result<Arc<Template>, StoreError> {
        if let Some(t) = self.inner.templates.get(&id) {
            return Ok(t);
        }
        let t = Arc::new(self.store().template(id).await?);
        self.inner.templates.insert(id, t.clone());
        Ok(t)
    }

    pub fn rate_limits(&self) -> &RateLimits {
        &self.inner.rate_limits
    }

    pub fn settings(&self) -> &ApiSettings {
        &self.inner.settings
    }
}
