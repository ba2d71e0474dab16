//! What this instance shares with the others outside the database, as `serve` wires it:
//! Redis (rate limits counted together, cache notices) and NATS JetStream (the outbox's
//! events, published by an observer). Each is optional; without it the instance keeps its
//! limits and caches to itself and publishes nothing.

use std::sync::{Arc, OnceLock};

use anyhow::Context as _;
use coupond_api::{AppSettings, AppState};
use coupond_engine::shared::Notice;
use coupond_redis::{NoticeKey, Publisher, Redis, RedisSettings, Subscriber};

use crate::config::{redact_url, Config};

/// Redis as this instance uses it: its limits and notices are in the API's settings; the
/// publisher and subscriber run once the state exists ([`Shared::start`]).
pub struct Shared {
    loops: Option<(Publisher, Subscriber)>,
    /// The state the subscriber hands notices to, set once it exists.
    state: Arc<OnceLock<AppState>>,
}

/// Connects (lazily) to the configured Redis, if any, and puts its limits and notifier into
/// `settings`. `instance` names this process in its notices; `secret` (the user-token secret
/// every instance shares) is what its notices are signed with.
pub fn redis(
    config: &Config,
    instance: &str,
    secret: &[u8],
    settings: &mut AppSettings,
) -> anyhow::Result<Shared> {
    let state = Arc::new(OnceLock::<AppState>::new());
    let Some(url) = &config.redis.url else {
        return Ok(Shared { loops: None, state });
    };
    let redis = Redis::new(&redis_settings(config, url, secret))
        .with_context(|| format!("redis.url (redis_url) {}", redact_url(url)))?;
    let slot = state.clone();
    let heard = Arc::new(move |n: &Notice| {
        if let Some(s) = slot.get() {
            s.heard(n);
        }
    });
    let (notifier, publisher, subscriber) = redis.notices(instance, heard);
    settings.shared_limits = Some(Arc::new(redis));
    settings.claim_limits_on_error = config.redis.claim_limits_on_error;
    settings.redeem_limits_on_error = config.redis.redeem_limits_on_error;
    settings.peers = Arc::new(notifier);
    tracing::info!(redis = %redact_url(url), "rate limits and cache notices shared through Redis");
    Ok(Shared {
        loops: Some((publisher, subscriber)),
        state,
    })
}

/// The `[redis]` section as the Redis crate takes it, for `url`, signing notices with a key
/// derived from `secret`.
fn redis_settings(config: &Config, url: &str, secret: &[u8]) -> RedisSettings {
    RedisSettings {
        url: url.to_owned(),
        key_prefix: config.redis.key_prefix.clone(),
        timeout: config.redis.timeout,
        notice_key: NoticeKey::derive(secret),
    }
}

impl Shared {
    /// Starts the notice publisher and subscriber (supervised), handing what the subscriber
    /// hears to `state`.
    pub fn start(
        self,
        state: &AppState,
        stop: &tokio::sync::watch::Receiver<bool>,
    ) -> Vec<tokio::task::JoinHandle<()>> {
        let _ = self.state.set(state.clone());
        let Some((publisher, subscriber)) = self.loops else {
            return vec![];
        };
        let workers = state.workers();
        vec![
            crate::serve::supervised("redis_publisher", workers, stop, publisher, Publisher::run),
            crate::serve::supervised(
                "redis_subscriber",
                workers,
                stop,
                subscriber,
                Subscriber::run,
            ),
        ]
    }
}

/// The NATS JetStream publisher, if `nats.url` is set: one more outbox observer.
pub async fn nats(config: &Config) -> anyhow::Result<Option<Arc<dyn coupond_engine::Observer>>> {
    let Some(url) = &config.nats.url else {
        return Ok(None);
    };
    let n = &config.nats;
    let settings = coupond_nats::NatsSettings {
        url: url.clone(),
        stream: n.stream.clone(),
        subject_prefix: n.subject_prefix.clone(),
        replicas: n.replicas as usize,
        max_age: n.max_age,
        ack_timeout: n.ack_timeout,
    };
    let publisher = coupond_nats::NatsPublisher::connect(settings)
        .await
        .with_context(|| format!("nats.url (nats_url) {}", redact_url(url)))?;
    tracing::info!(nats = %redact_url(url), stream = %n.stream, "outbox events published to NATS JetStream");
    Ok(Some(Arc::new(publisher)))
}

/// Tells the running instances (through Redis, if configured) that a key was revoked, so they
/// refuse it at once rather than after `cache_ttl`. A Redis that cannot be reached is said on
/// stderr; the revocation itself is done either way. `secret` signs the notice.
pub async fn tell_keys_changed(config: &Config, secret: &[u8]) {
    let Some(url) = &config.redis.url else {
        return;
    };
    let told = async {
        let redis = Redis::new(&redis_settings(config, url, secret))?;
        redis.announce("coupond-cli", Notice::KeysChanged).await
    };
    match told.await {
        Ok(()) => eprintln!("the running instances were told through Redis"),
        Err(e) => eprintln!(
            "warning: the running instances could not be told ({e}); they refuse the key \
             within auth.cache_ttl ({:?})",
            config.auth.cache_ttl
        ),
    }
}
