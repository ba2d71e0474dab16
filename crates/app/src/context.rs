//! [`App`], the application context: the store and clock, the engines (claims, checkout,
//! accounts), the hot path's caches, rate limits, notices to other instances and the
//! background workers, built once from [`AppSettings`].

use std::sync::Arc;

use coupond_domain::{MerchantId, Template, TemplateId, Timestamp, Zone};
use coupond_engine::accounts::{Accounts, HashGate};
use coupond_engine::centre::Shelf;
use coupond_engine::checkout::TemplateSource;
use coupond_engine::invitations::Invitations;
use coupond_engine::self_audit::Auditor;
use coupond_engine::shared::Notice;
use coupond_engine::supervise::Workers;
use coupond_engine::{
    Checkout, ClaimEngine, Clock, CodeGenerator, IssuanceWorker, Seen, TagWorker,
};
use coupond_store::{Store, StoreError};

use crate::cache::TtlCache;
use crate::caller::Principal;
use crate::ratelimit::{Limit, RateLimits, Sharing};
use crate::settings::AppSettings;
use crate::shelf_cache::{Need, ShelfCache};

/// The application: every front door (the API, the console, the CLI's `serve`) reaches the
/// store, the engines, the caches and the background workers through it. Read-only after
/// start and cheap to clone (one `Arc`).
#[derive(Clone, Debug)]
pub struct App {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    claims: ClaimEngine,
    rate_limits: RateLimits,
    redeem_limits: RateLimits,
    code_set_limits: Limit<MerchantId>,
    /// Pauses and resumes per template: a template flipping all the time has every
    /// instance's coupon centre read it again each time.
    pause_limits: Limit<TemplateId>,
    codes: CodeGenerator,
    auditor: Auditor,
    checkout: Checkout,
    issuance: IssuanceWorker,
    tagging: TagWorker,
    accounts: Accounts,
    invitations: Invitations,
    /// Principals of recently seen API keys (and the key's id), by key hash.
    keys: TtlCache<[u8; 32], (Principal, coupond_store::audit::Who)>,
    templates: TtlCache<TemplateId, Arc<Template>>,
    /// The coupon centre's shelf of open templates: read whole once per `cache_ttl`, its
    /// templates read again one by one when they are forgotten.
    shelf: ShelfCache,
    /// Held while one request reads the shelf, so a burst of requests after it expired reads
    /// it once.
    shelf_loading: tokio::sync::Mutex<()>,
    /// Restarts of the supervised background loops, for `/readyz`.
    workers: Workers,
    /// Checks the tokens of unsubscribe links (signed with a key derived from the JWT secret).
    unsubscribe: coupond_engine::messaging::Unsubscribe,
    /// Users seen by their requests, waiting to be written.
    seen: Seen,
    /// Rung when a campaign message is recorded; `serve`'s campaign sender waits on it.
    campaign_messages: Arc<tokio::sync::Notify>,
    settings: AppSettings,
}

impl App {
    /// `secret` (the JWT secret) also signs unsubscribe links.
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        secret: &[u8],
        settings: AppSettings,
    ) -> Self {
        let peers = settings.peers.clone();
        let claims = ClaimEngine::with_peers(
            store.clone(),
            clock.clone(),
            settings.claim_mode,
            peers,
            settings.cache_ttl,
        );
        let sharing = |on_error| {
            let limits = settings.shared_limits.clone()?;
            Some(Sharing { limits, on_error })
        };
        let pace = settings.background_txn_target;
        let codes = CodeGenerator::new(store.clone(), clock.clone(), pace);
        let checkout = Checkout::new(
            store.clone(),
            clock.clone(),
            settings.lock_ttl,
            settings.max_lock_ttl,
        )
        .with_currency(settings.currency)
        .with_zone(settings.time_zone);
        let issuance = IssuanceWorker::new(store.clone(), clock.clone(), pace);
        let tagging = TagWorker::new(store.clone(), clock.clone(), pace);
        let hashes = HashGate::new(settings.password_hashes, std::time::Duration::from_secs(1));
        let accounts = Accounts::new(store.clone(), clock.clone()).with_hash_gate(hashes.clone());
        let invitations = Invitations::new(
            store.clone(),
            clock.clone(),
            hashes,
            settings.messaging.clone(),
            &settings.public_url,
        );
        let auditor = Auditor::new(store.clone(), clock.clone(), settings.audit_at, "api")
            .in_zone(settings.time_zone);
        let seen = Seen::new(
            store.clone(),
            clock.clone(),
            settings.seen_resolution,
            settings.seen_capacity,
        );
        App {
            inner: Arc::new(Inner {
                store,
                clock,
                claims,
                rate_limits: RateLimits::new(
                    ("claim_per_user", "claim_per_ip"),
                    settings.claim_rate_per_user,
                    settings.claim_rate_per_ip,
                    sharing(settings.claim_limits_on_error),
                ),
                redeem_limits: RateLimits::new(
                    ("redeem_per_user", "redeem_per_ip"),
                    settings.redeem_rate_per_user,
                    settings.redeem_rate_per_ip,
                    sharing(settings.redeem_limits_on_error),
                ),
                code_set_limits: Limit::new("code_set", settings.code_set_rate),
                pause_limits: Limit::new("template_pause", settings.pause_rate),
                codes,
                auditor,
                checkout,
                issuance,
                tagging,
                accounts,
                invitations,
                keys: TtlCache::new(settings.cache_ttl, 100_000),
                templates: TtlCache::new(settings.cache_ttl, 10_000),
                shelf: ShelfCache::new(settings.cache_ttl),
                shelf_loading: tokio::sync::Mutex::new(()),
                workers: Workers::default(),
                unsubscribe: coupond_engine::messaging::Unsubscribe::new(
                    secret,
                    &settings.public_url,
                ),
                seen,
                campaign_messages: Arc::default(),
                settings,
            }),
        }
    }

    /// Makes and checks unsubscribe links.
    pub fn unsubscribe(&self) -> &coupond_engine::messaging::Unsubscribe {
        &self.inner.unsubscribe
    }

    /// The store, for this layer's services only: the front doors call those.
    pub(crate) fn store(&self) -> &dyn Store {
        self.inner.store.as_ref()
    }

    pub fn now(&self) -> Timestamp {
        self.inner.clock.now()
    }

    /// Operator accounts: adding, disabling, passwords and set-password links.
    pub fn accounts(&self) -> &Accounts {
        &self.inner.accounts
    }

    /// Merchants' invitations to their teams.
    pub fn invitations(&self) -> &Invitations {
        &self.inner.invitations
    }

    /// The claim engine; `serve` shuts it down (draining queued claims) after the server.
    pub fn claims(&self) -> &ClaimEngine {
        &self.inner.claims
    }

    /// Principals of recently seen API keys, by key hash.
    pub fn key_cache(&self) -> &TtlCache<[u8; 32], (Principal, coupond_store::audit::Who)> {
        &self.inner.keys
    }

    /// A template as read at most `cache_ttl` ago (for the claim path).
    pub async fn claimed_template(&self, id: TemplateId) -> Result<Arc<Template>, StoreError> {
        if let Some(t) = self.inner.templates.get(&id) {
            return Ok(t);
        }
        let generation = self.inner.templates.generation();
        let t = Arc::new(self.store().template(id).await?);
        self.inner.templates.insert_from(generation, id, t.clone());
        Ok(t)
    }

    /// The coupon centre's shelf (see [`Shelf`]) as read whole at most `cache_ttl` ago, with
    /// every template forgotten since read again.
    pub async fn shelf(&self) -> Result<Arc<Shelf>, StoreError> {
        if let Need::Current(shelf) = self.inner.shelf.need() {
            return Ok(shelf);
        }
        // With a cache, one request reads and the others wait for its shelf; without one,
        // each reads its own.
        let _one = if self.settings().cache_ttl.is_zero() {
            None
        } else {
            Some(self.inner.shelf_loading.lock().await)
        };
        let (shelf, read_at, covered, generation) = match self.inner.shelf.need() {
            Need::Current(shelf) => return Ok(shelf),
            Need::Mend {
                shelf,
                read_at,
                stale,
                generation,
            } => {
                let mended = shelf.with_fresh(self.store(), &stale, self.now()).await?;
                (mended, read_at, stale, generation)
            }
            Need::Load { stale, generation } => {
                let read_at = std::time::Instant::now();
                let whole = Shelf::load(self.store(), self.now()).await?;
                (whole, read_at, stale, generation)
            }
        };
        let shelf = Arc::new(shelf);
        self.inner
            .shelf
            .keep(generation, read_at, shelf.clone(), &covered);
        Ok(shelf)
    }

    /// Where `serve`'s supervisor records background loops' restarts (shown on `/readyz`).
    pub fn workers(&self) -> &Workers {
        &self.inner.workers
    }

    /// Templates as read at most `cache_ttl` ago, for quotes (see [`TemplateSource`]).
    pub fn cached_templates(&self) -> &dyn TemplateSource {
        self
    }

    /// Drops a template from the claim path's cache, and has the coupon centre's shelf read it
    /// again (see [`crate::invalidate`]).
    pub fn forget_template(&self, id: TemplateId) {
        self.inner.templates.remove(&id);
        self.inner.shelf.mark(id);
    }

    /// Acts on `notice` here and tells the other instances.
    pub fn tell(&self, notice: Notice) {
        self.heard(&notice);
        self.settings().peers.tell(notice);
    }

    /// Every instance forgets its copies of activity `id`'s templates (the activity was edited,
    /// paused, resumed or aborted).
    pub async fn forget_activity_templates(
        &self,
        id: coupond_domain::ActivityId,
    ) -> Result<(), coupond_store::StoreError> {
        for t in self.store().activity_templates(id).await? {
            self.tell(Notice::TemplateChanged { template: t.id });
        }
        Ok(())
    }

    /// Acts on a notice (from another instance, or this one's own): drops what went stale.
    pub fn heard(&self, notice: &Notice) {
        match *notice {
            Notice::KeysChanged => self.inner.keys.clear(),
            Notice::TemplateChanged { template } => self.forget_template(template),
            Notice::StockRaised { template, stock } => {
                self.forget_template(template);
                self.claims().forget_sold_out(template, stock);
            }
            Notice::SoldOut { template, stock } => {
                self.forget_template(template);
                self.claims().heard_sold_out(template, stock);
            }
            Notice::Resync => {
                self.inner.keys.clear();
                self.inner.templates.clear();
                self.inner.shelf.clear();
                self.claims().forget_all_sold_out();
            }
        }
    }

    /// Claim rate limits.
    pub fn rate_limits(&self) -> &RateLimits {
        &self.inner.rate_limits
    }

    /// Code lookup rate limits: redemptions, and quotes that preview a code.
    pub fn redeem_limits(&self) -> &RateLimits {
        &self.inner.redeem_limits
    }

    /// Shared-code changes, per merchant.
    pub fn code_set_limits(&self) -> &Limit<MerchantId> {
        &self.inner.code_set_limits
    }

    /// Pauses and resumes, per template.
    pub fn pause_limits(&self) -> &Limit<TemplateId> {
        &self.inner.pause_limits
    }

    /// Forgets rate-limit keys back at a full burst (called periodically by `serve`).
    pub fn shrink_limits(&self) {
        self.inner.rate_limits.shrink();
        self.inner.redeem_limits.shrink();
        self.inner.code_set_limits.shrink();
        self.inner.pause_limits.shrink();
    }

    /// The bulk issuance worker; `serve` runs its loop.
    pub fn issuance_worker(&self) -> &IssuanceWorker {
        &self.inner.issuance
    }

    /// The bulk tag upload worker; `serve` runs its loop.
    pub fn tag_worker(&self) -> &TagWorker {
        &self.inner.tagging
    }

    /// Quotes, locks, confirms and cancels.
    pub fn checkout(&self) -> &Checkout {
        &self.inner.checkout
    }

    /// The background self-audit: the API queues runs on it; `serve` runs its loop.
    pub fn auditor(&self) -> &Auditor {
        &self.inner.auditor
    }

    /// The background generator of code batches; `serve` runs its loop.
    pub fn code_generator(&self) -> &CodeGenerator {
        &self.inner.codes
    }

    pub fn settings(&self) -> &AppSettings {
        &self.inner.settings
    }

    /// The platform's currency (`platform.currency`).
    pub fn currency(&self) -> coupond_domain::Currency {
        self.inner.settings.currency
    }

    /// The platform's time zone (`platform.time_zone`).
    pub fn zone(&self) -> Zone {
        self.inner.settings.time_zone
    }

    /// Rung when a campaign message is recorded: `serve`'s campaign sender wakes on it.
    pub fn campaign_messages(&self) -> &Arc<tokio::sync::Notify> {
        &self.inner.campaign_messages
    }

    /// Users seen by their requests: the guard marks them; `serve` runs its flusher loop.
    pub fn seen(&self) -> &Seen {
        &self.inner.seen
    }
}

/// Quotes read templates through the same cache as claims: those cached are not read or
/// decoded again, the rest come in one read and are cached.
#[async_trait::async_trait]
impl TemplateSource for App {
    async fn templates(&self, ids: &[TemplateId]) -> Result<Vec<Arc<Template>>, StoreError> {
        let mut found = Vec::with_capacity(ids.len());
        let mut missing = vec![];
        for id in ids {
            match self.inner.templates.get(id) {
                Some(t) => found.push(t),
                None => missing.push(*id),
            }
        }
        if !missing.is_empty() {
            let generation = self.inner.templates.generation();
            for t in self.store().templates_by_ids(&missing).await? {
                let t = Arc::new(t);
                self.inner
                    .templates
                    .insert_from(generation, t.id, t.clone());
                found.push(t);
            }
        }
        Ok(found)
    }
}
