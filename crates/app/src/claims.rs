//! Claiming: a template's coupon claimed, or a promotion code redeemed, by a user for itself
//! or by the order service for a user. The rules of who may claim for whom, the rate limits,
//! the sold-out memory, the listing a claim names and the audience are applied here, once, for
//! every front door.

use std::net::IpAddr;
use std::sync::Arc;

use coupond_domain::{
    Actor, Channel, ClaimRejection, ListingId, Source, Template, TemplateId, TypedCode, UserId,
};
use coupond_engine::{redemption, ClaimAsk, ClaimError, Claimed};
use coupond_store::StoreError;

use crate::caller::Principal;
use crate::context::App;
use crate::error::{AppError, AppResult};
use crate::retry::RetryKey;

/// Who a claim is for and who asks, as the caller may have it: users claim for themselves,
/// service keys and operators name the user. Made only by [`App::claimant`].
#[derive(Clone, Debug)]
pub struct Claimant {
    user: UserId,
    actor: Actor,
    /// The client address per-IP limits count: only for user tokens, since service keys
    /// (the order service, a gateway) speak for many users from few addresses.
    ip: Option<IpAddr>,
    /// Whether the user asks for itself (it is then told less about templates it may not see).
    by_user: bool,
    /// A claim made by a service or an operator, not through the user's own app.
    for_user: bool,
}

impl Claimant {
    /// The user the coupon is for.
    pub fn user(&self) -> &UserId {
        &self.user
    }
}

/// A claim of one template's coupon.
#[derive(Debug)]
pub struct ClaimRequest {
    pub template: TemplateId,
    /// The listing whose page the claim was made from: kept as the coupon's channel.
    pub listing: Option<ListingId>,
    /// The caller's label for where the claim came from.
    pub source: Option<Source>,
    /// The caller's `Idempotency-Key`, if it sent one.
    pub retry: Option<RetryKey>,
}

/// A redemption of a promotion code, as typed.
#[derive(Debug)]
pub struct RedeemRequest {
    pub code: String,
    pub source: Option<Source>,
    pub retry: Option<RetryKey>,
}

/// The coupon a claim or a redemption issued (or, for a retry, issued before), with its
/// template.
#[derive(Debug)]
pub struct Issued {
    pub template: Arc<Template>,
    pub claimed: Claimed,
}

/// The scopes of retry keys kept with the claim itself (the routes' names, for keys kept
/// before this layer existed).
const CLAIM_SCOPE: &str = "POST /v1/templates/{id}/claims";
const REDEEM_SCOPE: &str = "POST /v1/codes/{code}/redeem";

impl App {
    /// For whom `p` claims when it asks for `asked`: users for themselves, service keys and
    /// operators for the user they name. `ip` is the client's address.
    pub fn claimant(
        &self,
        p: &Principal,
        asked: Option<UserId>,
        ip: Option<IpAddr>,
    ) -> AppResult<Claimant> {
        let (user, actor) = match (p, asked) {
            (Principal::User(me), None) => (me.clone(), Actor::User(me.clone())),
            (Principal::User(me), Some(u)) if &u == me => (u, Actor::User(me.clone())),
            (Principal::User(_), Some(_)) => {
                return Err(AppError::invalid(
                    "not_allowed",
                    "user_id",
                    "users claim for themselves; only service keys name a user",
                ))
            }
            (_, Some(u)) => (u, p.actor()),
            (_, None) => {
                return Err(AppError::invalid(
                    "missing_field",
                    "user_id",
                    "service keys must name the user",
                ))
            }
        };
        let by_user = matches!(p, Principal::User(_));
        Ok(Claimant {
            user,
            actor,
            ip: ip.filter(|_| by_user),
            by_user,
            for_user: !by_user,
        })
    }

    /// Claims a coupon of `req.template` for `who`.
    pub async fn claim(&self, who: Claimant, req: ClaimRequest) -> AppResult<Issued> {
        let id = req.template;
        let idempotency = req
            .retry
            .map(|k| k.scoped(CLAIM_SCOPE, &format!("{id}\n{}", who.user)));
        self.rate_limits().check(&who.user, who.ip).await?;
        // Sold out is final: answer from memory, before reading anything (a keyed retry still
        // goes to the database, which knows its coupon).
        if idempotency.is_none() && self.claims().sold_out_from_memory(id) {
            return Err(AppError::ClaimRefused(ClaimRejection::SoldOut));
        }
        let template = self.claimed_template(id).await?;
        if let Some(l) = req.listing {
            self.check_listing(&template, l).await?;
        }
        if !template.is_public() {
            // A draft another merchant is preparing: as if it did not exist.
            return Err(AppError::NotFound);
        }
        let channel = match (req.listing, who.for_user) {
            (Some(l), _) => Channel::Listing(l),
            (None, false) => Channel::Direct,
            (None, true) => Channel::Service,
        };
        let by_user = who.by_user;
        let ask = ClaimAsk {
            user: who.user,
            actor: who.actor,
            idempotency,
            code: None,
            channel,
            source: req.source,
        };
        match self.claims().claim(&template, ask).await {
            // A user outside the audience is answered as the user's view of the template
            // answers it: as if it did not exist (the order service is told why).
            Err(ClaimError::Rejected(ClaimRejection::NotEligible)) if by_user => {
                Err(AppError::NotFound)
            }
            Ok(claimed) => Ok(Issued { template, claimed }),
            Err(e) => Err(e.into()),
        }
    }

    /// A claim named from a listing's page: one read, never on a plain claim. A merchant's
    /// template is claimed from that merchant's listings only.
    async fn check_listing(&self, template: &Template, listing: ListingId) -> AppResult<()> {
        match self.store().listing(listing).await {
            Ok(found) if template.merchant_id.is_none_or(|m| m == found.merchant_id) => Ok(()),
            Ok(_) | Err(StoreError::NotFound) => Err(AppError::invalid(
                "unknown_listing",
                "listing_id",
                "no such listing of the template's merchant",
            )),
            Err(e) => Err(e.into()),
        }
    }

    /// Redeems a promotion code for `who`. Every code that cannot be used is one answer
    /// (`UnusableCode`), whatever the reason, so answers never tell which codes exist.
    pub async fn redeem(&self, who: Claimant, req: RedeemRequest) -> AppResult<Issued> {
        // Counted before anything is looked at: failed guesses cost as much as good ones.
        self.redeem_limits().check(&who.user, who.ip).await?;
        let code = TypedCode::parse(&req.code).map_err(|_| AppError::unusable_code())?;
        let idempotency = req
            .retry
            .map(|k| k.scoped(REDEEM_SCOPE, &format!("{}\n{}", code.as_str(), who.user)));
        let ask = ClaimAsk {
            user: who.user,
            actor: who.actor,
            idempotency,
            code: None,
            // Set by redemption to the code's batch.
            channel: Channel::Direct,
            source: req.source,
        };
        let (template, claimed) =
            redemption::redeem(self.store(), self, self.claims(), &code, ask, self.now()).await?;
        Ok(Issued { template, claimed })
    }
}
