//! coupond's application layer: the services the front doors (the HTTP API, the console) call
//! with the caller ([`Principal`]), which check who may act and apply the rules once, over the
//! store, the engines, the caches and the workers it owns. Neither front door sees the store.
//!
//! - [`console_sessions`]: the console's sign-ins, kept server side.
//! - [`context`]: [`App`], the application context (store, clock, engines, caches, rate
//!   limits, notices to other instances, background workers), read-only and cheap to clone.
//! - [`settings`]: [`AppSettings`], what the configuration says.
//! - [`caller`]: [`Principal`] (who calls) and its [`Role`].
//! - [`identify`]: who a key or an operator account is ([`caller::Identity`]), and
//!   [`App::acting`], which admits it to an operation ([`caller::Access`]) and names it in the
//!   audit trail.
//! - [`downloads`]: CSV downloads too large to hold, as streams of pieces.
//! - [`error`]: [`AppError`], every store, domain and engine error mapped once.
//! - [`records`]: the kept records services answer with, named for the front doors.
//! - [`retry`]: [`RetryKey`], a caller's key that makes a write safe to retry.
//! - [`own_account`]: a person's own sign-in, second factor, password link and invitation.
//! - [`pages`]: cursor pages of every list ([`pages::PageRequest`], [`pages::PageOf`]).
//! - [`claims`]: claiming a template's coupon and redeeming a code ([`App::claim`],
//!   [`App::redeem`]) for a [`claims::Claimant`] the caller may claim for.
//! - [`centre`]: the coupon centre, what a user may claim now.
//! - [`checkout`]: quoting an order ([`App::quote`]), with a code's preview.
//! - [`rules`]: a promotion rule tried on a made-up order ([`App::preview_rule`]).
//! - [`named_rules`]: rules many templates share: create, read, a new version every template
//!   using it follows, delete when unused.
//! - [`orders`]: orders' holds on their coupons (lock, confirm, cancel, extend, refund, an
//!   order paid without a coupon), each refusal named here.
//! - [`coupons`]: revoking a coupon, and who holds a template's coupons.
//! - [`codes`]: a template's shared code and batches of single-use codes.
//! - [`activities`]: the platform's activities, each with what the caller may do with it.
//! - [`template_reads`]: a template with the caller's actions, and lists of templates.
//! - [`templates`]: templates and activities as a caller may see, create and edit them.
//! - [`inbox`]: a user's inbox.
//! - [`issuance`]: starting bulk issuance to a list or a segment of users.
//! - [`merchants`]: merchants and the platform's names for its cities.
//! - [`keys`]: merchants' API keys.
//! - [`listings`]: listings as a caller may see them; binding and unbinding templates.
//! - [`contacts`]: where users can be reached and what they chose, and unsubscribe links.
//! - [`message_texts`]: the platform's message texts, their preview, and the delivery log.
//! - [`messages`]: sending and reading a template's campaign messages.
//! - [`people`]: the people who sign into the console, and merchants' invitations.
//! - [`reports`]: a template's and an activity's figures, and the reconciliation.
//! - [`today`]: today's figures of a caller, and the outbox consumers' lag.
//! - [`steering`]: publishing, pausing, resuming, stopping and aborting, each telling every
//!   instance what went stale.
//! - [`views`]: what services answer about activities, templates, listings, coupons and code
//!   batches (statuses computed from the clock when built), as the API sends them; users'
//!   views of the coupon centre are types of their own.
//! - [`users`]: a user's wallet as those who help them see it, their tags and when they
//!   were last seen.
//! - [`shared_tags`]: the tags the platform shares with merchants.
//! - [`webhooks`]: endpoints that receive events, and their deliveries.
//! - [`audit_trail`]: the audit trail as a caller may read it.
//! - [`audits`]: the self-audit's runs, and asking for one.
//! - [`cache`]: the short-lived cache of the hot path (API keys, claimed templates).
//! - [`shelf_cache`]: the coupon centre's shelf, read whole once per `cache_ttl` and mended per
//!   template in between.
//! - [`ratelimit`]: per-user and per-IP rate limits (claims, code lookups), in process or
//!   shared through Redis.
//! - [`invalidate`]: the outbox observer that drops cached templates when they change.
//! - [`health`]: whether this instance can serve, and the gauges read at scrape time.
//! - [`events`]: the outbox as a feed, in commit order or newest first.
//! - [`forwarded`]: which client a connection speaks for behind trusted proxies.
#![forbid(unsafe_code)]

pub mod activities;
pub mod audit_trail;
pub mod audits;
pub mod cache;
pub mod caller;
pub mod centre;
pub mod checkout;
pub mod claims;
pub mod codes;
pub mod console_sessions;
pub mod contacts;
pub mod context;
pub mod coupons;
pub mod downloads;
pub mod error;
pub mod events;
pub mod forwarded;
pub mod health;
pub mod identify;
pub mod inbox;
pub mod invalidate;
pub mod issuance;
pub mod keys;
pub mod listings;
pub mod merchants;
pub mod message_texts;
pub mod messages;
pub mod named_rules;
pub mod orders;
pub mod own_account;
pub mod pages;
pub mod people;
pub mod ratelimit;
pub mod records;
pub mod reports;
pub mod retry;
pub mod rules;
pub mod settings;
pub mod shared_tags;
pub mod shelf_cache;
pub mod steering;
pub mod template_reads;
pub mod templates;
pub mod today;
pub mod users;
pub mod views;
pub mod webhooks;

pub use caller::{Access, Identity, Principal, Role};
pub use context::App;
pub use error::{AppError, AppResult, FieldError};
pub use retry::RetryKey;
pub use settings::AppSettings;
