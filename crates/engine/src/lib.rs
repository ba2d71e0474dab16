//! coupond's engine: the moving parts around the store.
//!
//! - [`clock`]: [`Clock`], the one source of "now". Production reads the system clock; tests
//!   inject a [`ManualClock`] and move time by hand, so no test waits on wall-clock time.
//! - [`accounts`]: [`accounts::Accounts`], operator accounts (platform and merchant staff):
//!   the domain's rules, argon2id password hashes, verification that says nothing about
//!   which part was wrong.
//! - [`invitations`]: [`invitations::Invitations`], merchants' invitations to their teams,
//!   sent by email and answered alike whether the address has an account or not.
//! - [`second_factor`]: RFC 6238 one-time codes, the operators' optional second factor.
//! - [`campaigns`]: the workflows of merchants, activities and templates (edit, publish,
//!   abort; approving and rejecting enrollments) every front door calls, applying the domain's state rules before one store transaction.
//! - [`steering`]: pausing and resuming templates and activities, stopping a template's
//!   claiming for good, recorded in the audit trail.
//! - [`catalog`]: the workflows of merchants' listings (create, change, bind and unbind
//!   templates, delete), each one store transaction recording its change in the audit trail.
//! - [`cities`]: naming the platform's cities, recorded in the audit trail.
//! - [`centre`]: the coupon centre: what a user may claim now, cut from a [`centre::Shelf`]
//!   of the open templates (read in one go, kept by the API like the claim path's templates),
//!   and the public views of one template and one running activity.
//! - [`claims`]: [`ClaimEngine`], per-template group commit of claims: all claims waiting for
//!   a template are committed in one transaction and each caller is answered after the commit.
//! - [`checkout`]: [`Checkout`] (quotes; lock, confirm and cancel of an order's coupons with
//!   the domain's rules applied inside the lock's transaction; a lock's own deadline and its
//!   extension) and the [`Sweeper`] that ends locks past their deadline.
//! - [`jobs`]: the one shape of a chunked background job: a [`jobs::JobKind`] (its open jobs
//!   and one chunk of one) run by [`jobs::Jobs`], with progress per chunk, resumption after a
//!   crash, chunks paced to a target time and owners taking turns. Its kinds:
//! - [`codes`]: [`CodeGenerator`], which fills batches of single-use promotion codes.
//! - [`issuance`]: [`IssuanceWorker`], bulk issuance.
//! - [`tagging`]: [`TagWorker`], bulk tag uploads.
//! - [`keys`]: API keys' format, issuing and revoking them (the API, the console and the
//!   CLI), recorded in the audit trail.
//! - [`user_tags`]: setting a user's tags, sharing tags with merchants, recorded in the trail.
//! - [`lifecycle`]: revoking a coupon, refunding a confirmed order, deleting a draft.
//! - [`redemption`]: redeeming a promotion code (whether a code is usable by a user, and the
//!   claim it leads to), for the redeem route and a code previewed at checkout.
//! - [`pacing`]: [`Pacer`], which sizes background chunks to a target transaction time.
//! - [`performance`]: the performance report (funnel, discount, GMV, average order value with
//!   and without a coupon) of a template, activity, merchant or the platform, by local day and
//!   by channel.
//! - [`figures_keeper`]: [`FiguresKeeper`], which counts and keeps the report's settled hours
//!   of the platform and the recent activities ahead of the first request.
//! - [`reports`]: the reconciliation of discounts given in a period, per template and funder,
//!   and its CSV.
//! - [`settlement`]: what the platform owes each merchant for the discounts activities' splits
//!   put on it, from the reconciliation of the same period, and its CSV.
//! - [`stats`]: the window of a template's stats, every hour or day of it with its slot,
//!   days being local days of the platform's time zone.
//! - [`seen`]: [`Seen`], users marked seen in memory on each of their requests and written
//!   in batches by its flusher loop (users' last-seen instants, for active-user filters).
//! - [`shared`]: what several instances share beyond the database: [`shared::SharedLimits`]
//!   (rate limits counted in one place) and [`shared::Peers`] (notices that clear stale caches).
//! - [`sold_out`]: the templates this process saw sold out, cleared by a raise of the stock.
//! - [`live_gate`]: [`live_gate::LiveGate`], which announces a template's opening before its
//!   first claims here commit, so events keep each template's order.
//! - [`scheduler`]: [`Scheduler`], the one loop (under a lease) that announces status
//!   transitions, expires coupons, ends locks and sends reminders as time makes them due.
//! - [`self_audit`]: [`Auditor`], the invariant checks of `coupond audit` run every day at
//!   `background.audit_at` and on request (one instance at a time, under a lease), each run
//!   kept with its findings; a run that finds any emits `audit.failed`.
//! - [`dispatch`]: [`Dispatcher`], which hands the outbox to [`Observer`]s (reminder planner,
//!   inbox notifier) at least once, recording each one's position.
//! - [`webhooks`]: [`WebhookFanout`] (an observer queueing deliveries),
//!   [`WebhookSender`] (signed posts, concurrent per endpoint, with exponential backoff) and
//!   [`TargetPolicy`] (no deliveries to internal addresses).
//! - [`messaging`]: email over SMTP and SMS through a provider: the [`messaging::Notifier`]
//!   (an observer queueing rendered messages per channel, honouring users' choices), one
//!   [`messaging::Courier`] per channel (paced, retried, quiet hours), the transports, the
//!   texts per locale and the signed unsubscribe link.
//!
//! - [`worker`]: the one shape of a background loop: a [`Worker`] does one pass
//!   (`pass`), [`worker::run`] repeats passes until shutdown; [`Lease`] lets one instance at a
//!   time run a loop (the scheduler, the dispatcher, the webhook sender).
//! - [`supervise`]: [`supervise()`](supervise::supervise), under which `serve` runs every
//!   background loop: a loop that panics is logged, counted and restarted with a backoff.
//!
//! Every background loop takes a shutdown signal and exposes `run_once` for tests. The
//! webhook sender keeps its own loop (`WebhookSender::run`): deliveries stay in flight across
//! its passes, and it passes again whenever one ends.
#![forbid(unsafe_code)]

pub mod accounts;
pub mod campaigns;
pub mod catalog;
pub mod centre;
pub mod checkout;
pub mod cities;
mod claim_errors;
pub mod claims;
pub mod clock;
pub mod codes;
pub mod dispatch;
pub mod figures_keeper;
pub mod invitations;
pub mod issuance;
pub mod jobs;
pub mod keys;
pub mod lifecycle;
pub mod live_gate;
pub mod messaging;
pub mod pacing;
pub mod performance;
pub mod redemption;
pub mod reports;
pub mod scheduler;
pub mod second_factor;
pub mod seen;
pub mod self_audit;
pub mod settlement;
pub mod shared;
pub mod sold_out;
pub mod stats;
pub mod steering;
pub mod supervise;
pub mod tagging;
pub mod telemetry;
pub mod user_tags;
pub mod webhooks;
pub mod worker;

pub use campaigns::CampaignError;
pub use checkout::{Checkout, CheckoutError, HoldError, QuoteError, Sweeper};
pub use claims::{ClaimAsk, ClaimEngine, ClaimError, ClaimMode, Claimed};
pub use clock::{Clock, ManualClock, SystemClock};
pub use codes::CodeGenerator;
pub use dispatch::{Dispatcher, Observer, ReminderPlanner};
pub use figures_keeper::FiguresKeeper;
pub use issuance::IssuanceWorker;
pub use messaging::InboxNotifier;
pub use pacing::Pacer;
pub use scheduler::Scheduler;
pub use seen::Seen;
pub use self_audit::Auditor;
pub use tagging::TagWorker;
pub use webhooks::{RetryPolicy, SenderSettings, TargetPolicy, WebhookFanout, WebhookSender};
pub use worker::{Lease, Pass, Worker};
