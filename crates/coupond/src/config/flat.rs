//! The flat setting names of earlier versions, still what the environment uses
//! (`COUPOND_<FLAT NAME>`) and still accepted at the top level of a file and from flags: each
//! is moved to its section before the configuration is read, by [`Nested`], a provider that
//! wraps another.

use figment::value::{Dict, Map, Value};
use figment::{Error, Metadata, Profile, Provider};

/// Every setting: its flat name, its section and its key there.
pub const FLAT: [(&str, &str, &str); 100] = [
    ("listen", "server", "listen"),
    ("max_body_bytes", "server", "max_body_bytes"),
    ("max_upload_bytes", "server", "max_upload_bytes"),
    ("max_concurrent_uploads", "server", "max_concurrent_uploads"),
    ("shutdown_grace", "server", "shutdown_grace"),
    ("max_connections", "server", "max_connections"),
    ("max_connections_per_ip", "server", "max_connections_per_ip"),
    ("header_timeout", "server", "header_timeout"),
    ("stall_timeout", "server", "stall_timeout"),
    ("request_timeout", "server", "request_timeout"),
    ("trusted_proxies", "server", "trusted_proxies"),
    ("database_url", "database", "url"),
    ("database_pool_size", "database", "pool_size"),
    ("log_level", "log", "level"),
    ("log_format", "log", "format"),
    ("jwt_secret", "auth", "jwt_secret"),
    ("max_token_lifetime", "auth", "max_token_lifetime"),
    ("cache_ttl", "auth", "cache_ttl"),
    ("freeze_period", "catalog", "freeze_period"),
    (
        "max_bindings_per_listing",
        "catalog",
        "max_bindings_per_listing",
    ),
    ("code_batch_sync_max", "catalog", "code_batch_sync_max"),
    ("claim_mode", "claim", "mode"),
    ("claim_max_batch", "claim", "max_batch"),
    ("claim_rate_per_user", "limits", "claim_rate_per_user"),
    ("claim_burst_per_user", "limits", "claim_burst_per_user"),
    ("claim_rate_per_ip", "limits", "claim_rate_per_ip"),
    ("claim_burst_per_ip", "limits", "claim_burst_per_ip"),
    ("redeem_rate_per_user", "limits", "redeem_rate_per_user"),
    ("redeem_burst_per_user", "limits", "redeem_burst_per_user"),
    ("redeem_rate_per_ip", "limits", "redeem_rate_per_ip"),
    ("redeem_burst_per_ip", "limits", "redeem_burst_per_ip"),
    (
        "idempotency_rate_per_principal",
        "limits",
        "idempotency_rate_per_principal",
    ),
    (
        "idempotency_burst_per_principal",
        "limits",
        "idempotency_burst_per_principal",
    ),
    (
        "code_set_rate_per_merchant",
        "limits",
        "code_set_rate_per_merchant",
    ),
    (
        "code_set_burst_per_merchant",
        "limits",
        "code_set_burst_per_merchant",
    ),
    (
        "pause_rate_per_template",
        "limits",
        "pause_rate_per_template",
    ),
    (
        "pause_burst_per_template",
        "limits",
        "pause_burst_per_template",
    ),
    ("lock_ttl", "checkout", "lock_ttl"),
    ("max_lock_ttl", "checkout", "max_lock_ttl"),
    ("idempotency_ttl", "idempotency", "ttl"),
    ("idempotency_stale", "idempotency", "stale"),
    (
        "idempotency_max_answer_bytes",
        "idempotency",
        "max_answer_bytes",
    ),
    ("reminder_days_before", "background", "reminder_days_before"),
    ("background_txn_target", "background", "txn_target"),
    ("audit_at", "background", "audit_at"),
    (
        "max_queued_codes_per_owner",
        "background",
        "max_queued_codes_per_owner",
    ),
    (
        "max_queued_issuance_per_owner",
        "background",
        "max_queued_issuance_per_owner",
    ),
    ("webhook_retry_base", "webhook", "retry_base"),
    ("webhook_max_attempts", "webhook", "max_attempts"),
    ("webhook_allow_hosts", "webhook", "allow_hosts"),
    ("max_webhooks_per_owner", "webhook", "max_per_owner"),
    ("webhook_timeout", "webhook", "timeout"),
    ("webhook_concurrency", "webhook", "concurrency"),
    (
        "webhook_concurrency_per_endpoint",
        "webhook",
        "concurrency_per_endpoint",
    ),
    (
        "webhook_concurrency_per_owner",
        "webhook",
        "concurrency_per_owner",
    ),
    ("console_secret", "console", "secret"),
    ("console_secure_cookies", "console", "secure_cookies"),
    ("console_session_ttl", "console", "session_ttl"),
    (
        "console_sign_in_free_failures",
        "console",
        "sign_in_free_failures",
    ),
    ("console_sign_in_max_delay", "console", "sign_in_max_delay"),
    ("console_password_hashes", "console", "password_hashes"),
    ("console_key_sign_in", "console", "key_sign_in"),
    (
        "console_require_totp_for_platform",
        "console",
        "require_totp_for_platform",
    ),
    ("redis_url", "redis", "url"),
    ("redis_key_prefix", "redis", "key_prefix"),
    ("redis_timeout", "redis", "timeout"),
    (
        "redis_claim_limits_on_error",
        "redis",
        "claim_limits_on_error",
    ),
    (
        "redis_redeem_limits_on_error",
        "redis",
        "redeem_limits_on_error",
    ),
    ("nats_url", "nats", "url"),
    ("nats_stream", "nats", "stream"),
    ("nats_subject_prefix", "nats", "subject_prefix"),
    ("nats_replicas", "nats", "replicas"),
    ("nats_max_age", "nats", "max_age"),
    ("nats_ack_timeout", "nats", "ack_timeout"),
    ("messages_default_locale", "messages", "default_locale"),
    ("messages_public_url", "messages", "public_url"),
    ("messages_reminder_at", "messages", "reminder_at"),
    (
        "messages_campaigns_per_owner_per_day",
        "messages",
        "campaigns_per_owner_per_day",
    ),
    ("email_smtp_url", "email", "smtp_url"),
    ("email_from", "email", "from"),
    ("email_kinds", "email", "kinds"),
    ("email_quiet_hours", "email", "quiet_hours"),
    ("email_per_second", "email", "per_second"),
    ("email_max_attempts", "email", "max_attempts"),
    ("sms_provider", "sms", "provider"),
    ("sms_base_url", "sms", "base_url"),
    ("sms_account_sid", "sms", "account_sid"),
    ("sms_auth_token", "sms", "auth_token"),
    ("sms_from", "sms", "from"),
    ("sms_kinds", "sms", "kinds"),
    ("sms_quiet_hours", "sms", "quiet_hours"),
    ("sms_per_second", "sms", "per_second"),
    ("sms_max_attempts", "sms", "max_attempts"),
    ("sms_http_format", "sms", "http_format"),
    ("sms_http_fields", "sms", "http_fields"),
    ("sms_http_headers", "sms", "http_headers"),
    ("platform_time_zone", "platform", "time_zone"),
    ("platform_currency", "platform", "currency"),
    ("users_seen_resolution", "users", "seen_resolution"),
    ("users_seen_capacity", "users", "seen_capacity"),
];

/// The flat names, for the environment provider.
pub fn names() -> Vec<&'static str> {
    FLAT.iter().map(|(flat, _, _)| *flat).collect()
}

/// Another provider's data with its flat names moved into their sections (a flat name wins
/// over the same setting given in its section by the same provider).
pub struct Nested<P>(pub P);

impl<P: Provider> Provider for Nested<P> {
    fn metadata(&self) -> Metadata {
        self.0.metadata()
    }

    fn data(&self) -> Result<Map<Profile, Dict>, Error> {
        let mut data = self.0.data()?;
        for dict in data.values_mut() {
            nest(dict);
        }
        Ok(data)
    }
}

fn nest(dict: &mut Dict) {
    for (flat, section, key) in FLAT {
        let Some(value) = dict.remove(flat) else {
            continue;
        };
        let entry = dict
            .entry(section.to_owned())
            .or_insert_with(|| Value::from(Dict::new()));
        if let Value::Dict(_, inner) = entry {
            inner.insert(key.to_owned(), value);
        } else {
            // A section given as a plain value: put the flat name back so that reading
            // reports the section as malformed.
            dict.insert(flat.to_owned(), value);
        }
    }
}
