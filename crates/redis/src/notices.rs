//! Cache notices between instances over Redis pub/sub.
//!
//! A process tells its [`Notifier`] (never waiting); its [`Publisher`] sends each notice on
//! the channel `<prefix>:notices`, tagged with the process's instance id; every process's
//! [`Subscriber`] hands the others' notices to the process. Pub/sub delivers to whoever is
//! subscribed at that moment, at most once: after a reconnect the subscriber hands the process
//! [`Notice::Resync`] first, so whatever it missed is forgotten rather than served stale.
//!
//! Every notice is sealed with the deployment's [`NoticeKey`](crate::NoticeKey) and carries
//! when it was sent: an unsigned, forged or stale message on the channel is dropped and
//! counted (`coupond_peer_notices_total{way="rejected"}`).

use std::sync::Arc;
use std::time::Duration;

use coupond_engine::shared::{Notice, Peers};
use coupond_engine::telemetry::PEER_NOTICES;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, watch, Mutex};

use crate::{count_error, Redis};

/// Notices waiting to be published; past this many (Redis down for long) new ones are
/// dropped and counted: the others' caches then expire by `cache_ttl`.
const QUEUE: usize = 10_000;
/// How often a subscription is pinged to find out it is still there.
const PING_EVERY: Duration = Duration::from_secs(5);
/// Attempts to publish one notice before it is dropped (then the subscribers' `Resync` on
/// reconnecting, or `cache_ttl`, makes up for it).
const ATTEMPTS: u32 = 3;

/// A notice as it travels: who sent it, so its sender skips its own, and when (milliseconds
/// since the epoch), so an old one is not acted on.
#[derive(Debug, Serialize, Deserialize)]
struct Envelope {
    from: String,
    at: i64,
    #[serde(flatten)]
    notice: Notice,
}

/// The [`Peers`] a process tells; hands notices to its [`Publisher`].
#[derive(Debug)]
pub struct Notifier {
    queue: mpsc::Sender<Notice>,
}

impl Peers for Notifier {
    fn tell(&self, notice: Notice) {
        if self.queue.try_send(notice).is_err() {
            count_error("publish");
        }
    }
}

/// Sends this process's notices to the others.
#[derive(Clone, Debug)]
pub struct Publisher {
    redis: Redis,
    instance: Arc<str>,
    // A mutex only so a restarted publisher (after a panic) takes over the same queue; one
    // publisher runs at a time.
    queue: Arc<Mutex<mpsc::Receiver<Notice>>>,
}

/// Hears the other instances' notices.
#[derive(Clone)]
pub struct Subscriber {
    redis: Redis,
    instance: Arc<str>,
    heard: Arc<dyn Fn(&Notice) + Send + Sync>,
}

impl std::fmt::Debug for Subscriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriber")
            .field("instance", &self.instance)
            .finish_non_exhaustive()
    }
}

impl Redis {
    /// The three parts of this process's notices: what it tells, what sends its notices, and
    /// what hears the others' (handing each to `heard`). `instance` names this process.
    pub fn notices(
        &self,
        instance: &str,
        heard: Arc<dyn Fn(&Notice) + Send + Sync>,
    ) -> (Notifier, Publisher, Subscriber) {
        let (tx, rx) = mpsc::channel(QUEUE);
        let instance: Arc<str> = instance.into();
        let publisher = Publisher {
            redis: self.clone(),
            instance: instance.clone(),
            queue: Arc::new(Mutex::new(rx)),
        };
        let subscriber = Subscriber {
            redis: self.clone(),
            instance,
            heard,
        };
        (Notifier { queue: tx }, publisher, subscriber)
    }
}

impl Redis {
    /// Publishes one notice now, as `from` (for a process with no publisher loop: the CLI's
    /// `keys revoke`). Ok once Redis took it; the subscribers then at once hear it.
    pub async fn announce(&self, from: &str, notice: Notice) -> Result<(), crate::RedisError> {
        let envelope = Envelope {
            from: from.to_owned(),
            at: crate::seal::now_ms(),
            notice,
        };
        let json = serde_json::to_string(&envelope)
            .map_err(|e| crate::RedisError::Command(e.to_string()))?;
        let text = self.notice_key.seal(&json);
        let mut conn = self.conn.clone();
        let mut publish = redis::cmd("PUBLISH");
        publish.arg(self.channel()).arg(text);
        let sent = self.bounded(publish.query_async::<i64>(&mut conn)).await;
        match &sent {
            Ok(_) => metrics::counter!(PEER_NOTICES, "way" => "sent").increment(1),
            Err(_) => count_error("publish"),
        }
        sent.map(drop)
    }
}

impl Publisher {
    /// Publishes queued notices until `stop` turns true. A notice Redis does not take after
    /// [`ATTEMPTS`] tries is dropped and counted: a Redis that failed has also dropped the
    /// others' subscriptions, and each forgets everything when it subscribes again.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let mut queue = self.queue.lock().await;
        loop {
            let notice = tokio::select! {
                n = queue.recv() => match n { Some(n) => n, None => return },
                _ = stop.wait_for(|s| *s) => return,
            };
            for attempt in 1..=ATTEMPTS {
                match self.redis.announce(&self.instance, notice.clone()).await {
                    Ok(()) => break,
                    Err(e) if attempt == ATTEMPTS => {
                        tracing::warn!(error = %e, "a cache notice was not sent to the other instances");
                    }
                    Err(_) => {
                        let backoff = Duration::from_millis(100 << attempt);
                        tokio::select! {
                            _ = tokio::time::sleep(backoff) => {}
                            _ = stop.wait_for(|s| *s) => return,
                        }
                    }
                }
            }
        }
    }
}

impl Subscriber {
    /// Hears notices until `stop` turns true, subscribing again (after a second) whenever
    /// the subscription is lost.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        loop {
            tokio::select! {
                e = self.listen() => {
                    count_error("subscribe");
                    tracing::warn!(error = %e, "not hearing other instances' cache notices; retrying");
                }
                _ = stop.wait_for(|s| *s) => return,
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = stop.wait_for(|s| *s) => return,
            }
        }
    }

    /// Subscribes and hands on what it hears; returns why it stopped. The subscription is
    /// pinged every [`PING_EVERY`]: a connection lost without a word (a partition) is noticed
    /// and made up for by a `Resync`, not left silent.
    async fn listen(&self) -> crate::RedisError {
        let pubsub = async {
            let mut pubsub = self.redis.client.get_async_pubsub().await?;
            pubsub.subscribe(self.redis.channel()).await?;
            Ok::<_, redis::RedisError>(pubsub)
        };
        let (mut sink, mut messages) = match self.redis.bounded(pubsub).await {
            Ok(p) => p.split(),
            Err(e) => return e,
        };
        // Whatever was said while not subscribed is lost: forget everything cached.
        (self.heard)(&Notice::Resync);
        let mut ping = tokio::time::interval(PING_EVERY);
        ping.tick().await;
        loop {
            tokio::select! {
                message = messages.next() => match message {
                    Some(m) => self.hand_on(&m),
                    None => return crate::RedisError::Command("the subscription ended".into()),
                },
                _ = ping.tick() => {
                    if let Err(e) = self.redis.bounded(sink.ping::<redis::Value>()).await {
                        return e;
                    }
                }
            }
        }
    }

    /// Hands one message on, unless it is this instance's own, or not sealed with the
    /// deployment's key, stale or unreadable.
    fn hand_on(&self, message: &redis::Msg) {
        let Ok(text) = message.get_payload::<String>() else {
            return;
        };
        match self.open(&text) {
            Ok(e) if *e.from == *self.instance => {}
            Ok(e) => {
                metrics::counter!(PEER_NOTICES, "way" => "received").increment(1);
                (self.heard)(&e.notice);
            }
            Err(why) => {
                metrics::counter!(PEER_NOTICES, "way" => "rejected").increment(1);
                tracing::warn!(why, "a message on the notice channel was dropped");
            }
        }
    }

    /// The envelope in `text`, if it is sealed with this deployment's key, recent and
    /// readable (one from a newer version is not).
    fn open(&self, text: &str) -> Result<Envelope, &'static str> {
        let json = self
            .redis
            .notice_key
            .open(text)
            .map_err(|_| "not signed with this deployment's key")?;
        let envelope: Envelope = serde_json::from_str(json).map_err(|_| "unreadable")?;
        crate::seal::check_age(envelope.at, std::time::SystemTime::now()).map_err(|_| "stale")?;
        Ok(envelope)
    }
}
