//! coupond's outbox published to NATS JetStream, for the downstream systems the reference
//! designs feed through their message queue (listing index, notification service, caches).
//!
//! [`NatsPublisher`] is one of the outbox dispatcher's observers (`nats`): each event goes to
//! `<subject_prefix>.<event type>` (`coupond.coupon.claimed`) with its id as `Nats-Msg-Id`,
//! and its position moves only after JetStream acknowledged every event of the batch. A crash
//! between the ack and the position's move sends the batch again; the stream's duplicate
//! window (two minutes, set when coupond creates it) drops the re-sends, so a consumer sees
//! each event once, in the outbox's order. The stream is created if missing.
#![forbid(unsafe_code)]

use std::time::Duration;

use async_nats::jetstream::{self, message::PublishMessage, stream};
use async_trait::async_trait;
use coupond_engine::telemetry::{NATS_ERRORS, NATS_PUBLISHED};
use coupond_engine::Observer;
use coupond_store::{Event, StoreError, StoreResult};
use tokio::sync::OnceCell;

/// How long JetStream remembers message ids to drop re-sends: longer than a restart takes.
pub const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);

/// Where events go and how the stream is made.
#[derive(Clone, Debug)]
pub struct NatsSettings {
    /// `nats://host:4222` (credentials in the URL if the server wants them).
    pub url: String,
    /// The stream's name (`COUPOND`).
    pub stream: String,
    /// Subjects are `<subject_prefix>.<event type>`.
    pub subject_prefix: String,
    /// Copies of the stream, when coupond creates it.
    pub replicas: usize,
    /// How long the stream keeps events, when coupond creates it (zero: no age limit).
    pub max_age: Duration,
    /// The longest a publish waits for its acknowledgement.
    pub ack_timeout: Duration,
}

/// Publishes the outbox to JetStream (an [`Observer`]).
#[derive(Debug)]
pub struct NatsPublisher {
    client: async_nats::Client,
    js: jetstream::Context,
    settings: NatsSettings,
    /// Set once the stream is known to exist; until then each batch first makes sure of it.
    stream: OnceCell<()>,
}

impl NatsPublisher {
    /// Connects in the background (a NATS that is down delays nothing: batches wait at their
    /// position until it is up).
    pub async fn connect(settings: NatsSettings) -> Result<Self, async_nats::ConnectError> {
        let client = async_nats::ConnectOptions::new()
            .name("coupond")
            .retry_on_initial_connect()
            // async-nats says these at INFO or below: a NATS that went away is a warning.
            .event_callback(|event| async move {
                match event {
                    async_nats::Event::Connected => tracing::info!("NATS connected"),
                    async_nats::Event::Disconnected => tracing::warn!(
                        "NATS disconnected: outbox events wait at their position until it is back"
                    ),
                    other => tracing::warn!(event = %other, "NATS"),
                }
            })
            .connection_timeout(settings.ack_timeout)
            .connect(settings.url.as_str())
            .await?;
        let mut js = jetstream::new(client.clone());
        js.set_timeout(settings.ack_timeout);
        Ok(NatsPublisher {
            client,
            js,
            settings,
            stream: OnceCell::new(),
        })
    }

    /// Creates the stream if it is missing (an existing one is left as its operator set it).
    async fn ensure_stream(&self) -> StoreResult<()> {
        self.stream
            .get_or_try_init(|| async {
                let s = &self.settings;
                let config = stream::Config {
                    name: s.stream.clone(),
                    subjects: vec![format!("{}.>", s.subject_prefix)],
                    num_replicas: s.replicas,
                    max_age: s.max_age,
                    duplicate_window: DUPLICATE_WINDOW,
                    ..Default::default()
                };
                self.js.get_or_create_stream(config).await.map(drop)
            })
            .await
            .map(|_| ())
            .map_err(|e| failed("creating the stream", e))
    }
}

/// A NATS failure: the batch stays at its position and is sent again later.
fn failed(what: &str, e: impl std::fmt::Display) -> StoreError {
    metrics::counter!(NATS_ERRORS).increment(1);
    StoreError::Unavailable(format!("NATS: {what}: {e}").into())
}

/// What a consumer receives: the event as the outbox holds it.
fn payload(e: &Event) -> bytes::Bytes {
    let body = serde_json::json!({
        "id": e.id,
        "type": e.kind,
        "at": e.at.to_string(),
        "data": e.body,
    });
    serde_json::to_vec(&body).unwrap_or_default().into()
}

#[async_trait]
impl Observer for NatsPublisher {
    fn name(&self) -> &str {
        coupond_engine::dispatch::sinks::NATS
    }

    async fn handle(&self, events: &[Event]) -> StoreResult<()> {
        // Not connected: say so at once rather than wait out the timeouts.
        let state = self.client.connection_state();
        if state != async_nats::connection::State::Connected {
            return Err(failed("not connected", format!("{state:?}")));
        }
        self.ensure_stream().await?;
        // Sent one after another on one connection (so stored in this order), acknowledged
        // together: one round trip's wait per batch, not per event.
        let mut acks = Vec::with_capacity(events.len());
        for e in events {
            let subject = format!("{}.{}", self.settings.subject_prefix, e.kind);
            let publish = PublishMessage::build()
                .payload(payload(e))
                .message_id(e.id.to_string());
            let ack = self.js.send_publish(subject, publish).await;
            acks.push(ack.map_err(|err| failed("publishing", err))?);
        }
        for ack in acks {
            ack.await.map_err(|e| failed("acknowledgement", e))?;
        }
        metrics::counter!(NATS_PUBLISHED).increment(events.len() as u64);
        coupond_store::failpoints::hit("nats.after_ack")
    }
}
