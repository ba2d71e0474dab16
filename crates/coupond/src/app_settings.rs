//! The API's settings ([`AppSettings`]) as `serve` builds them from the configuration's
//! sections: limits, timeouts, rates, the webhook and proxy policies, the audit schedule.

use std::sync::Arc;

use anyhow::Context;
use coupond_api::ratelimit::Rate;
use coupond_api::AppSettings;
use coupond_engine::{ClaimMode, TargetPolicy};

use crate::config::{ClaimModeName, Config};

/// The API's settings, from the configuration's sections.
pub(crate) fn api_settings(
    config: &Config,
    targets: Arc<TargetPolicy>,
) -> anyhow::Result<AppSettings> {
    Ok(AppSettings {
        freeze: time::Duration::try_from(config.catalog.freeze_period)
            .context("freeze_period is too long")?,
        max_body_bytes: config.server.max_body_bytes,
        max_upload_bytes: config.server.max_upload_bytes,
        max_bindings_per_listing: config.catalog.max_bindings_per_listing,
        claim_mode: match config.claim.mode {
            ClaimModeName::Batched => ClaimMode::Batched {
                max_batch: config.claim.max_batch.clamp(1, 10_000),
            },
            ClaimModeName::Single => ClaimMode::Single,
        },
        claim_rate_per_user: Rate {
            per_second: config.limits.claim_rate_per_user,
            burst: config.limits.claim_burst_per_user,
        },
        cache_ttl: config.auth.cache_ttl,
        claim_rate_per_ip: Rate {
            per_second: config.limits.claim_rate_per_ip,
            burst: config.limits.claim_burst_per_ip,
        },
        redeem_rate_per_user: Rate {
            per_second: config.limits.redeem_rate_per_user,
            burst: config.limits.redeem_burst_per_user,
        },
        redeem_rate_per_ip: Rate {
            per_second: config.limits.redeem_rate_per_ip,
            burst: config.limits.redeem_burst_per_ip,
        },
        code_batch_sync_max: config.catalog.code_batch_sync_max,
        lock_ttl: time::Duration::try_from(config.checkout.lock_ttl)
            .context("lock_ttl is too long")?,
        max_lock_ttl: time::Duration::try_from(config.checkout.max_lock_ttl)
            .context("max_lock_ttl is too long")?,
        idempotency_ttl: time::Duration::try_from(config.idempotency.ttl)
            .context("idempotency_ttl is too long")?,
        idempotency_stale: time::Duration::try_from(config.idempotency.stale)
            .context("idempotency_stale is too long")?,
        request_timeout: config.server.request_timeout,
        max_concurrent_uploads: config.server.max_concurrent_uploads,
        max_token_lifetime: time::Duration::try_from(config.auth.max_token_lifetime)
            .context("max_token_lifetime is too long")?,
        idempotency_max_answer_bytes: config.idempotency.max_answer_bytes,
        idempotency_rate: Rate {
            per_second: config.limits.idempotency_rate_per_principal,
            burst: config.limits.idempotency_burst_per_principal,
        },
        code_set_rate: Rate {
            per_second: config.limits.code_set_rate_per_merchant,
            burst: config.limits.code_set_burst_per_merchant,
        },
        pause_rate: Rate {
            per_second: config.limits.pause_rate_per_template,
            burst: config.limits.pause_burst_per_template,
        },
        webhook_targets: targets,
        max_webhooks_per_owner: config.webhook.max_per_owner,
        trusted_proxies: Arc::new(
            coupond_api::forwarded::TrustedProxies::parse(&config.server.trusted_proxies)
                .map_err(|e| anyhow::anyhow!("trusted_proxies: {e}"))?,
        ),
        background_txn_target: config.background.txn_target,
        max_queued_codes_per_owner: i64::from(config.background.max_queued_codes_per_owner),
        max_queued_issuance_per_owner: i64::from(config.background.max_queued_issuance_per_owner),
        audit_at: config
            .background
            .audit_schedule()
            .map_err(anyhow::Error::msg)
            .context("audit_at")?,
        public_url: config.messages.public_url.clone(),
        time_zone: config.platform.time_zone,
        currency: config.platform.currency,
        seen_resolution: time::Duration::try_from(config.users.seen_resolution)
            .context("users_seen_resolution is too long")?,
        seen_capacity: config.users.seen_capacity,
        campaigns_per_owner_per_day: config.messages.campaigns_per_owner_per_day,
        password_hashes: config.console.password_hashes,
        ..AppSettings::default()
    })
}
