//! Application state: read-only after start and cheap to clone (one `Arc`).

use std::sync::Arc;

use coupond_domain::{Timestamp, Zone};
use coupond_engine::{
    Checkout, ClaimEngine, ClaimMode, Clock, CodeGenerator, IssuanceWorker, Seen, TagWorker,
};
use coupond_store::Store;

use crate::auth::{JwtKeys, Principal};
use crate::cache::TtlCache;
use crate::ratelimit::{Limit, Rate, RateLimits, Sharing};
use crate::shelf_cache::{Need, ShelfCache};
use crate::uploads::{UploadPermit, Uploads};
use coupond_domain::{MerchantId, Template, TemplateId};
use coupond_engine::accounts::{Accounts, HashGate};
use coupond_engine::centre::Shelf;
use coupond_engine::checkout::TemplateSource;
use coupond_engine::invitations::Invitations;
use coupond_engine::self_audit::{Auditor, TimeOfDay};
use coupond_engine::shared::{Alone, Notice, OnLimitError, Peers, SharedLimits};
use coupond_engine::supervise::Workers;
use coupond_engine::webhooks::TargetPolicy;
use coupond_store::StoreError;

/// Settings the API reads on every request.
#[derive(Clone, Debug)]
pub struct ApiSettings {
    /// Activities freeze this long before they start (and at the end of enrollment).
    pub freeze: time::Duration,
    /// Largest accepted request body, bytes.
    pub max_body_bytes: usize,
    /// Largest accepted upload (bulk issuance files), bytes.
    pub max_upload_bytes: usize,
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
    /// Code redemptions per user, counting failed attempts (they are how codes get guessed).
    /// Off by default here.
    pub redeem_rate_per_user: Rate,
    /// Code redemptions per client IP, for requests with user tokens. Off by default here.
    pub redeem_rate_per_ip: Rate,
    /// Code batches up to this size are generated within the request (201); larger ones in
    /// the background (202).
    pub code_batch_sync_max: u32,
    /// How long a lock holds an order's coupons without a confirm, unless it asks for its own
    /// deadline.
    pub lock_ttl: time::Duration,
    /// The furthest from now a lock's own deadline (`hold_until`) or an extension may be.
    pub max_lock_ttl: time::Duration,
    /// How long the answer to a request with an `Idempotency-Key` is kept for replay.
    pub idempotency_ttl: time::Duration,
    /// A request with an `Idempotency-Key` left unanswered this long is taken to have died
    /// with its process (kill -9, power loss); a retry then runs it again instead of being
    /// told 409 `idempotency_in_flight`. Longer than any request takes.
    pub idempotency_stale: time::Duration,
    /// How long API keys and claimed templates are cached in memory (zero: not at all). A
    /// key revoked by another process stops working within this time.
    pub cache_ttl: std::time::Duration,
    /// The longest a request may take, reading its body included (408 after it).
    pub request_timeout: std::time::Duration,
    /// Bulk issuance uploads read at once; one more is 429.
    pub max_concurrent_uploads: u32,
    /// The longest lifetime a user token may have.
    pub max_token_lifetime: time::Duration,
    /// Answers larger than this are not kept for replay under an `Idempotency-Key`.
    pub idempotency_max_answer_bytes: usize,
    /// Writes with an `Idempotency-Key` per user or merchant (service and platform keys are
    /// the operator's own systems and are not limited).
    pub idempotency_rate: Rate,
    /// Shared-code changes per merchant.
    pub code_set_rate: Rate,
    /// Pauses and resumes of one template (each tells every instance's coupon centre).
    pub pause_rate: Rate,
    /// Where webhooks may be sent.
    pub webhook_targets: Arc<TargetPolicy>,
    /// Webhook endpoints one owner may have enabled.
    pub max_webhooks_per_owner: u32,
    /// Peers whose `Forwarded` / `X-Forwarded-For` name the client (per-IP limits, logs).
    pub trusted_proxies: Arc<crate::forwarded::TrustedProxies>,
    /// Background transactions (code generation, bulk issuance) are sized to take about this
    /// long; zero: fixed, maximal chunks.
    pub background_txn_target: std::time::Duration,
    /// Codes one owner (a merchant, or the platform) may have waiting to be generated;
    /// a batch past it is 409 `queue_full`.
    pub max_queued_codes_per_owner: i64,
    /// Users one owner's open issuance jobs may have waiting; a job past it is 409
    /// `queue_full`.
    pub max_queued_issuance_per_owner: i64,
    /// Where claim and redemption limits are counted with other instances (Redis); `None`:
    /// in this process.
    pub shared_limits: Option<Arc<dyn SharedLimits>>,
    /// What claims do when the shared limits cannot be counted.
    pub claim_limits_on_error: OnLimitError,
    /// What code redemptions do when the shared limits cannot be counted.
    pub redeem_limits_on_error: OnLimitError,
    /// The other instances, told when a key is revoked or a template changes or sells out.
    pub peers: Arc<dyn Peers>,
    /// Whether the outbox is published to NATS (its consumer's backlog is then reported).
    pub publishes_to_nats: bool,
    /// When the self-audit runs by itself every day (UTC); `None`: only on request.
    pub audit_at: Option<TimeOfDay>,
    /// The API's public root, which emails' unsubscribe and invitation links point to.
    pub public_url: String,
    /// The channels configured outside the app: invitations go by its email channel.
    pub messaging: coupond_engine::messaging::MessagingRules,
    /// The platform's time zone: where "today" and the days of charts and reports begin.
    pub time_zone: Zone,
    /// The platform's currency, recorded with each order's amounts.
    pub currency: coupond_domain::Currency,
    /// A user is marked seen (last active) at most once per this long.
    pub seen_resolution: time::Duration,
    /// Users held in memory waiting to be marked seen, at most (see [`Seen`]).
    pub seen_capacity: usize,
    /// Campaign messages an owner (a merchant, or the platform) may send per local day.
    pub campaigns_per_owner_per_day: u32,
    /// Password checks (argon2id, 19 MiB each) running at once; 0: as many as the cores.
    pub password_hashes: usize,
}

impl Default for ApiSettings {
    fn default() -> Self {
        ApiSettings {
            freeze: time::Duration::minutes(5),
            max_body_bytes: 64 * 1024,
            max_upload_bytes: 64 * 1024 * 1024,
            default_page: 50,
            max_page: 200,
            max_bindings_per_listing: 3,
            claim_mode: ClaimMode::default(),
            claim_rate_per_user: Rate::OFF,
            claim_rate_per_ip: Rate::OFF,
            redeem_rate_per_user: Rate::OFF,
            redeem_rate_per_ip: Rate::OFF,
            code_batch_sync_max: 1_000,
            lock_ttl: time::Duration::minutes(15),
            max_lock_ttl: time::Duration::days(7),
            idempotency_ttl: time::Duration::hours(24),
            idempotency_stale: time::Duration::minutes(1),
            cache_ttl: std::time::Duration::ZERO,
            request_timeout: std::time::Duration::from_secs(60),
            max_concurrent_uploads: 2,
            max_token_lifetime: time::Duration::days(30),
            idempotency_max_answer_bytes: 64 * 1024,
            idempotency_rate: Rate::OFF,
            code_set_rate: Rate::OFF,
            pause_rate: Rate::OFF,
            webhook_targets: Arc::new(TargetPolicy::default()),
            max_webhooks_per_owner: 10,
            trusted_proxies: Arc::default(),
            background_txn_target: std::time::Duration::ZERO,
            max_queued_codes_per_owner: 2_000_000,
            max_queued_issuance_per_owner: 2_000_000,
            shared_limits: None,
            claim_limits_on_error: OnLimitError::Open,
            redeem_limits_on_error: OnLimitError::Closed,
            peers: Arc::new(Alone),
            publishes_to_nats: false,
            audit_at: None,
            public_url: "http://127.0.0.1:8080".into(),
            messaging: coupond_engine::messaging::MessagingRules {
                readers: coupond_engine::messaging::Readers::default(),
                channels: Vec::new(),
            },
            time_zone: Zone::UTC,
            currency: coupond_domain::Currency::CNY,
            seen_resolution: time::Duration::minutes(5),
            seen_capacity: 100_000,
            campaigns_per_owner_per_day: 3,
            password_hashes: 0,
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
    redeem_limits: RateLimits,
    idempotency_limits: Limit<String>,
    code_set_limits: Limit<MerchantId>,
    /// Pauses and resumes per template: a template flipping all the time has every
    /// instance's coupon centre read it again each time.
    pause_limits: Limit<TemplateId>,
    /// The uploads being read: the bound on uploads in memory at once, one per caller.
    uploads: Uploads,
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
        .with_currency(settings.currency);
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
        AppState {
            inner: Arc::new(Inner {
                store,
                clock,
                jwt: JwtKeys::new(jwt_secret),
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
                idempotency_limits: Limit::new("idempotency", settings.idempotency_rate),
                code_set_limits: Limit::new("code_set", settings.code_set_rate),
                pause_limits: Limit::new("template_pause", settings.pause_rate),
                uploads: Uploads::new(settings.max_concurrent_uploads as usize),
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
                    jwt_secret,
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

    pub fn store(&self) -> &dyn Store {
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

    pub fn jwt(&self) -> &JwtKeys {
        &self.inner.jwt
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

    /// Writes with an `Idempotency-Key`, per scope (user or merchant).
    pub fn idempotency_limits(&self) -> &Limit<String> {
        &self.inner.idempotency_limits
    }

    /// Shared-code changes, per merchant.
    pub fn code_set_limits(&self) -> &Limit<MerchantId> {
        &self.inner.code_set_limits
    }

    /// Pauses and resumes, per template.
    pub fn pause_limits(&self) -> &Limit<TemplateId> {
        &self.inner.pause_limits
    }

    /// A permit to read an upload for `who` (a principal's scope), if fewer than
    /// `max_concurrent_uploads` are being read and `who` has none being read.
    pub fn upload_permit(&self, who: &str) -> Option<UploadPermit> {
        self.inner.uploads.permit(who)
    }

    /// Forgets rate-limit keys back at a full burst (called periodically by `serve`).
    pub fn shrink_limits(&self) {
        self.inner.rate_limits.shrink();
        self.inner.redeem_limits.shrink();
        self.inner.idempotency_limits.shrink();
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

    pub fn settings(&self) -> &ApiSettings {
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
impl TemplateSource for AppState {
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
