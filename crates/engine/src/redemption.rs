//! Redeeming a promotion code: from the typed text to a claim of its template, under the same
//! rules as a claim. Every front door (the API's redeem route, a code previewed at checkout)
//! decides "usable or not" here, so a code is judged one way everywhere.
//!
//! Every unusable code (mistyped, unknown, redeemed by someone else, of a template that is
//! over or not offered to this user) is one answer, [`RedeemError::Unusable`], decided from
//! what was read (the code, and its template from the cache) before any claim transaction, so
//! answers and their cost never tell which codes exist.

use std::sync::Arc;

use coupond_domain::codes::TypedCode;
use coupond_domain::{check_claim, ClaimRejection, Template, Timestamp, UserId};
use coupond_store::{CodeClaim, PromoCode, Store, StoreError};

use crate::checkout::TemplateSource;
use crate::claims::{ClaimAsk, ClaimEngine, ClaimError, Claimed};

/// Why a redemption gave no coupon.
#[derive(Debug)]
pub enum RedeemError {
    /// The code cannot be redeemed by this user, for whatever reason (one answer for all).
    Unusable,
    /// Sold out or the per-user limit: answered as for a claim (only a holder of a good code
    /// learns them).
    Refused(ClaimRejection),
    /// The claim failed otherwise (unavailable, shutting down).
    Claim(ClaimError),
    Store(StoreError),
}

/// Whether `code` may go on to a claim by `user` at `now`. A single-use code this user
/// redeemed goes on (the claim answers the coupon it gave); one someone else redeemed does
/// not.
pub fn usable_by(code: &PromoCode, template: &Template, user: &UserId, now: Timestamp) -> bool {
    match &code.redeemed_by {
        Some(by) => by == user,
        // A paused template's code is real and will work again: the claim says `paused`.
        None => {
            template.is_public()
                && matches!(
                    check_claim(template, user, now),
                    Ok(()) | Err(ClaimRejection::Paused)
                )
        }
    }
}

/// The stored code `typed` names and its template, if `user` may redeem it at `now`.
pub async fn find_usable(
    store: &dyn Store,
    templates: &dyn TemplateSource,
    typed: &TypedCode,
    user: &UserId,
    now: Timestamp,
) -> Result<(PromoCode, Arc<Template>), RedeemError> {
    let found = match store.promo_code(typed.as_str()).await {
        Ok(found) => found,
        Err(StoreError::NotFound) => return Err(RedeemError::Unusable),
        Err(e) => return Err(RedeemError::Store(e)),
    };
    // Generated codes pass their check character and shared codes never do; a row of the
    // other kind than the text's form cannot exist, but the check costs nothing.
    if found.batch_id.is_some() != typed.is_generated_form() {
        return Err(RedeemError::Unusable);
    }
    let template = templates
        .templates(&[found.template_id])
        .await
        .map_err(RedeemError::Store)?
        .pop()
        .ok_or(RedeemError::Unusable)?;
    if !usable_by(&found, &template, user, now) {
        return Err(RedeemError::Unusable);
    }
    Ok((found, template))
}

/// Redeems `typed` for `ask`'s user: claims a coupon of the code's template through the claim
/// engine (the code travels with the claim, so a single-use code gives one coupon, once).
/// `ask.code` is set here.
pub async fn redeem(
    store: &dyn Store,
    templates: &dyn TemplateSource,
    claims: &ClaimEngine,
    typed: &TypedCode,
    ask: ClaimAsk,
    now: Timestamp,
) -> Result<(Arc<Template>, Claimed), RedeemError> {
    let (found, template) = find_usable(store, templates, typed, &ask.user, now).await?;
    let ask = ClaimAsk {
        channel: coupond_domain::Channel::Code(found.batch_id),
        code: Some(CodeClaim {
            single_use: found.batch_id.is_some(),
            code: found.code,
        }),
        ..ask
    };
    match claims.claim(&template, ask).await {
        Ok(claimed) => Ok((template, claimed)),
        // A real code whose coupons ran out, that the user already used up, or whose
        // template is paused for now: said as such (the code exists; retrying later may work).
        Err(ClaimError::Rejected(
            r @ (ClaimRejection::SoldOut | ClaimRejection::LimitReached | ClaimRejection::Paused),
        )) => Err(RedeemError::Refused(r)),
        Err(ClaimError::Rejected(_) | ClaimError::CodeTaken) => Err(RedeemError::Unusable),
        Err(e) => Err(RedeemError::Claim(e)),
    }
}
