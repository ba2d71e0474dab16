//! coupond's domain: the types and rules every other crate agrees on. No I/O.
//!
//! - [`money`]: [`Money`] (i64 minor units), [`BasisPoints`], rounding down and exact splitting.
//! - [`time`]: [`Timestamp`] (UTC, microsecond precision) and [`Window`] (half-open `[start, end)`).
//! - [`ids`]: identifiers ([`MerchantId`], [`UserId`], ...) and [`CitySet`].
//! - [`csv`]: the CSV coupond writes ([`CsvWriter`]), every text cell kept from being read as a
//!   spreadsheet formula, and the lines of the uploads it reads ([`csv::LineSplitter`]).
//! - [`codes`]: promotion codes: shared codes, generated single-use codes and their check
//!   character.
//! - [`coupon`]: what a coupon is worth ([`CouponValue`]) and the rules around it
//!   (scope, audience, stacking, validity, deduction mode).
//! - [`funding`]: [`Funding`], an activity's split of each discount between the platform and
//!   the merchant, and its rounding rule.
//! - [`merchant`], [`listing`], [`activity`], [`template`]: the records, their drafts (what a caller sends),
//!   their validated specs, and status as a pure function of `(record, now)`.
//! - [`city`]: the platform's names for its cities.
//! - [`schedule`]: the status transitions a record went through since the last one announced,
//!   each with its instant, for the scheduler's events.
//! - [`wallet`]: coupons held by users, their status, and the rules of claiming.
//! - [`centre`]: the coupon centre: which templates a user is offered now ([`on_offer`],
//!   [`centre::admits`]), which templates and activities a user may look at, and what it is
//!   told about each ([`Chances`]: stock left, how many it holds, whether it can claim).
//! - [`channel`]: how a coupon reached its holder ([`Channel`]) and a caller's label for it
//!   ([`Source`]).
//! - [`checkout`]: an order snapshot ([`Order`]), whether a coupon can be used on it
//!   ([`eligibility()`], [`Reason`]), what it takes off ([`discount()`], split over lines and lease
//!   months), and the best combination of a wallet ([`quote()`]).
//! - `queue`: how much background work (codes, issuance) one owner may have waiting.
//! - `lifecycle`: what each status allows: editing, publishing, aborting, and the re-check of
//!   enrolled templates when their activity changes.
//! - [`steering`]: pausing and resuming templates and activities ([`Pause`]) and stopping a
//!   template's claims for good, without voiding what users hold.
//! - `actions`: [`TemplateAction`], what may be done to a template now, computed from the
//!   same rules (`Template::actions`), for the API's views and the console's buttons.
//! - `stored`: the invariants every stored record keeps, checked when storage reads one back.
//! - [`operator`]: operator accounts (people of the platform and of merchants who sign in):
//!   [`Email`], [`OperatorRole`], [`OperatorDraft`], [`Operator`], and the rules of a
//!   password ([`check_password`]).
//! - [`rules`]: promotion rules: a template's [`Condition`] tree on the order, the customer
//!   and the clock, checked once into [`Conditions`], and what is missing ([`rules::Unmet`]).
//! - [`reference`]: [`Reference`], how the platform's other systems know a template or an
//!   activity (source, type, external id).
//! - [`note`]: [`Note`], a reason a person gave (a revoke's, a refund's).
//! - [`tags`]: [`Tag`] (user tags coupond holds) and [`Segment`] (users holding any of some
//!   tags), for tag audiences and segment issuance.
//! - [`text`]: the rules for free text (titles, names): visible, no bidirectional controls.
//! - [`messaging`]: messages outside the app: [`messaging::Channel`], [`messaging::MessageKind`]
//!   (marketing or service), users' contact points and choices, the texts per locale, quiet hours.
//! - [`zone`]: [`Zone`], an IANA time zone: local days ("today", reminders, charts) and local
//!   hours (when a message may be sent).
//! - [`error`]: [`DomainError`], the one error every rule returns, naming the field and a
//!   stable code.
//!
//! Validation happens once: a `*Spec` can only be built from a `*Draft` through `TryFrom` (or a
//! context check), so a value of that type has passed every rule.
#![forbid(unsafe_code)]

mod actions;
pub mod activity;
pub mod centre;
pub mod channel;
pub mod checkout;
pub mod city;
pub mod codes;
pub mod coupon;
pub mod csv;
pub mod error;
pub mod funding;
pub mod ids;
mod lifecycle;
pub mod listing;
pub mod merchant;
pub mod messaging;
pub mod money;
pub mod note;
pub mod operator;
pub mod queue;
pub mod reference;
pub mod rules;
pub mod schedule;
pub mod steering;
mod stored;
pub mod tags;
pub mod template;
pub mod text;
pub mod time;
pub mod wallet;
pub mod zone;

pub use actions::{ActivityAction, CouponAction, TemplateAction};
pub use activity::{
    Activity, ActivityDraft, ActivityPatch, ActivitySpec, ActivityStatus, Approval, FundedBy,
};
pub use centre::{on_offer, Chances};
pub use channel::{Channel, Source};
pub use checkout::{
    discount, eligibility, quote, standing, AppliedCoupon, Combination, CouponQuote, Discount,
    Lease, LeaseDraft, LineDiscount, LineDraft, LineKind, Order, OrderDraft, Quote, QuoteInput,
    Reason, TemplateUse,
};
pub use city::{City, CityDraft};
pub use codes::{CodeBatchDraft, CodeBatchSpec, SharedCode, TypedCode};
pub use coupon::{
    Audience, CouponKind, CouponValue, Coverage, DeductionMode, Exclusions, Gift, Priority, Scope,
    Stacking, StackingGroup, Validity,
};
pub use csv::CsvWriter;
pub use error::{DomainError, Findings};
pub use funding::{Funding, Split};
pub use ids::{
    ActivityId, CategoryId, CityId, CitySet, CouponId, ListingId, MerchantId, OperatorId, OrderId,
    RuleId, TemplateId, UserId,
};
pub use listing::{Listing, ListingDraft, ListingPatch};
pub use merchant::{Merchant, MerchantDraft, MerchantPatch};
pub use money::{BasisPoints, Currency, Money};
pub use note::Note;
pub use operator::{
    check_operator_name, check_password, Area, Email, Invitation, Operator, OperatorDraft,
    OperatorRole,
};
pub use reference::Reference;
pub use rules::{Condition, Conditions, Customer, Rule, RuleDraft, RuleTerms, RuleUse};
pub use schedule::Transition;
pub use steering::{Pause, PauseScope};
pub use tags::{Segment, Tag};
pub use template::{
    Decision, RefundPolicy, Review, Template, TemplateContext, TemplateDraft, TemplatePatch,
    TemplateSpec, TemplateStatus, LOW_STOCK_DIVISOR,
};
pub use time::{Timestamp, Window};
pub use wallet::{
    check_claim, claim_refusal, not_claimable, Actor, ClaimRejection, Coupon, CouponStatus,
    NotClaimable,
};
pub use zone::Zone;
