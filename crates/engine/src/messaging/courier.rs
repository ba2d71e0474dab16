//! One channel's sender: takes the due messages from the delivery log and sends them through
//! the channel's [`Transport`].
//!
//! One instance sends per channel (the `courier-<channel>` lease), so the pace set here is the
//! deployment's: at most `per_second` messages a second, the provider's limit. A message due
//! inside the recipient's quiet hours waits for their end, without a try counted. A refusal
//! for now (the server down, 429, 5xx) is tried again after the provider's `Retry-After` or an
//! exponential backoff; a refusal for good (a bad address, 4xx) or `max_attempts` tries fail
//! the message, with the provider's answer kept.
//!
//! Each attempt is claimed before it is handed to the provider ([`CLAIM`]: the message's due
//! time moves past the attempt's longest duration, in one conditional update), so however many
//! instances send, and whoever holds the lease, a message goes to the provider once per attempt
//! recorded: the lease paces the channel, the claim keeps a message from being sent twice.
//!
//! Delivery is at least once: a crash after the provider accepted a message and before its
//! `sent` was written sends it again, once its claim runs out ([`CLAIM`], 45 s). Each message carries its id to the provider (email's
//! `Message-ID`, the generic SMS adapter's `{{id}}`), so a provider that deduplicates by it
//! sees it once; Twilio cannot.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use coupond_store::{Outbound, OutboundStep, Store, StoreResult};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

use super::ChannelRules;
use crate::clock::Clock;
use crate::worker::{Lease, Pass, Worker};

/// Messages taken per pass.
const BATCH: u32 = 50;
/// The first retry's wait; each further one doubles, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(30);
const MAX_BACKOFF: Duration = Duration::from_secs(3600);
/// The longest `Retry-After` honoured.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(6 * 3600);
const IDLE: Duration = Duration::from_secs(1);
const LEASE: time::Duration = time::Duration::seconds(10);
/// How long one attempt holds its message: longer than a provider call may take (the SMTP
/// timeout is 30 s, the SMS one 20 s), so no other courier sends it meanwhile; a message whose
/// sender died mid-attempt is due again after it.
pub const CLAIM: time::Duration = time::Duration::seconds(45);

/// Why a provider did not take a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendError {
    /// What it answered (kept in the delivery log).
    pub answer: String,
    pub retry: Retry,
}

/// Whether and when to try again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// When the provider said (`Retry-After`).
    After(Duration),
    /// After the courier's own backoff.
    Backoff,
    /// Never: the message fails.
    Never,
}

/// A provider's API.
#[async_trait]
pub trait Transport: Send + Sync + std::fmt::Debug {
    /// Sends `m`; the provider's id for it.
    async fn send(&self, m: &Outbound) -> Result<String, SendError>;
}

/// What a pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub sent: usize,
    pub retried: usize,
    pub deferred: usize,
    pub failed: usize,
}

impl Outcome {
    fn handled(&self) -> usize {
        self.sent + self.retried + self.deferred + self.failed
    }
}

/// Sends one channel's messages. Cheap to clone.
#[derive(Clone)]
pub struct Courier {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    rules: ChannelRules,
    transport: Arc<dyn Transport>,
    lease: Lease,
    /// The provider's pace, shared by the clones (a supervised restart keeps it).
    pace: Arc<DefaultDirectRateLimiter>,
}

impl std::fmt::Debug for Courier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Courier")
            .field("rules", &self.rules)
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

impl Courier {
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        rules: ChannelRules,
        transport: Arc<dyn Transport>,
        holder: impl Into<String>,
    ) -> Self {
        let per_second = NonZeroU32::new(rules.per_second).unwrap_or(NonZeroU32::MIN);
        Courier {
            store,
            clock,
            transport,
            lease: Lease::new(name_of(rules.channel), holder, LEASE),
            pace: Arc::new(RateLimiter::direct(Quota::per_second(per_second))),
            rules,
        }
    }

    /// One pass: sends the messages due now (up to a batch).
    pub async fn run_once(&self) -> StoreResult<Outcome> {
        let now = self.clock.now();
        let mut out = Outcome::default();
        if !self.lease.hold(self.store.as_ref(), now).await? {
            return Ok(out);
        }
        for m in self
            .store
            .due_outbound(self.rules.channel, now, BATCH)
            .await?
        {
            let Some(step) = self.step(&m).await? else {
                continue; // another courier took it
            };
            match &step {
                OutboundStep::Sent { .. } => out.sent += 1,
                OutboundStep::Retry { .. } => out.retried += 1,
                OutboundStep::Defer { .. } => out.deferred += 1,
                OutboundStep::Failed { .. } => out.failed += 1,
            }
            let label = match &step {
                OutboundStep::Sent { .. } => "sent",
                OutboundStep::Retry { .. } => "retried",
                OutboundStep::Defer { .. } => "deferred",
                OutboundStep::Failed { .. } => "failed",
            };
            metrics::counter!("coupond_messages_total", "channel" => self.rules.channel.as_str(), "outcome" => label)
                .increment(1);
            self.store
                .record_outbound(m.id, &step, self.clock.now())
                .await?;
        }
        Ok(out)
    }

    /// What to do with `m` now: hold it through quiet hours, or claim and send it; `None` when
    /// another courier claimed it first.
    async fn step(&self, m: &Outbound) -> StoreResult<Option<OutboundStep>> {
        let now = self.clock.now();
        let allowed = self.rules.quiet.next_allowed(now, &m.zone);
        if allowed > now {
            return Ok(Some(OutboundStep::Defer { next_at: allowed }));
        }
        self.pace.until_ready().await;
        let now = self.clock.now();
        if !self
            .store
            .claim_outbound(m.id, now, now.plus(CLAIM))
            .await?
        {
            return Ok(None);
        }
        Ok(Some(match self.transport.send(m).await {
            Ok(answer) => OutboundStep::Sent { answer },
            Err(e) => self.after_refusal(m, e),
        }))
    }

    fn after_refusal(&self, m: &Outbound, e: SendError) -> OutboundStep {
        let tries = u32::try_from(m.attempts).unwrap_or(0) + 1;
        let wait = match e.retry {
            Retry::Never => None,
            _ if tries >= self.rules.max_attempts => None,
            Retry::After(d) => Some(d.min(MAX_RETRY_AFTER)),
            Retry::Backoff => Some(backoff(tries)),
        };
        match wait {
            None => OutboundStep::Failed { answer: e.answer },
            Some(d) => OutboundStep::Retry {
                next_at: self
                    .clock
                    .now()
                    .plus(time::Duration::try_from(d).unwrap_or(time::Duration::HOUR)),
                answer: e.answer,
            },
        }
    }
}

/// The name of `channel`'s courier: its lease's and its loop's.
fn name_of(channel: coupond_domain::messaging::Channel) -> &'static str {
    match channel {
        coupond_domain::messaging::Channel::Sms => "courier-sms",
        _ => "courier-email",
    }
}

/// The wait after the `tries`th failed try: 30 s, 1 min, 2 min, ... up to an hour.
fn backoff(tries: u32) -> Duration {
    FIRST_BACKOFF
        .saturating_mul(1 << tries.saturating_sub(1).min(16))
        .min(MAX_BACKOFF)
}

#[async_trait]
impl Worker for Courier {
    fn name(&self) -> &'static str {
        name_of(self.rules.channel)
    }

    async fn pass(&self) -> StoreResult<Pass> {
        Ok(match self.run_once().await?.handled() {
            0 => Pass::Idle(IDLE),
            _ => Pass::Busy,
        })
    }

    fn retry_after(&self) -> Duration {
        IDLE
    }
}

#[cfg(test)]
mod tests {
    use super::backoff;
    use std::time::Duration;

    #[test]
    fn backoff_doubles_up_to_an_hour() {
        assert_eq!(backoff(1), Duration::from_secs(30));
        assert_eq!(backoff(2), Duration::from_secs(60));
        assert_eq!(backoff(5), Duration::from_secs(480));
        assert_eq!(backoff(40), Duration::from_secs(3600));
    }
}
