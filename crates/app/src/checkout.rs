//! Quoting an order: every coupon of the user (or those named) with whether it applies and
//! why not, the best combination, and what a promotion code not yet redeemed would do.

use std::net::IpAddr;

use coupond_domain::checkout::{Reason, Situation};
use coupond_domain::codes::TypedCode;
use coupond_domain::rules::Unmet;
use coupond_domain::{
    discount, eligibility, Coupon, CouponId, CouponStatus, Money, Order, Quote, TemplateId,
    TemplateUse,
};
use coupond_engine::checkout::MAX_WALLET;
use coupond_engine::{redemption, QuoteError};
use serde::Serialize;
use utoipa::ToSchema;

use crate::caller::Principal;
use crate::context::App;
use crate::error::{AppError, AppResult};

/// A quote asked for.
#[derive(Debug)]
pub struct QuoteRequest {
    pub order: Order,
    /// Only these coupons (each must be the order's user's); `None`: every unused coupon of
    /// the user (up to [`MAX_WALLET`]).
    pub coupon_ids: Option<Vec<CouponId>>,
    /// A promotion code the user has not redeemed yet, as typed.
    pub code: Option<String>,
    /// The client's address (counted by the code lookup limits for user tokens).
    pub ip: Option<IpAddr>,
}

/// What a code's coupon would do for the order.
#[derive(Debug, Serialize, ToSchema)]
pub struct CodePreview {
    pub code: String,
    pub template_id: TemplateId,
    pub applicable: bool,
    pub reasons: Vec<Reason>,
    /// With `conditions_unmet`: what the template's conditions miss on this order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unmet: Vec<Unmet>,
    pub discount: Money,
}

impl App {
    /// Quotes `req.order` for `p`: users quote their own orders only; a quote with a code
    /// counts against the code redemption limits (it is a lookup of a code). Templates are
    /// read at most `cache_ttl` ago; a lock re-reads them and decides.
    pub async fn quote(
        &self,
        p: &Principal,
        req: QuoteRequest,
    ) -> AppResult<(Quote, Option<CodePreview>)> {
        let order = &req.order;
        let by_user = match p {
            Principal::User(me) if *me != order.user_id => {
                return Err(AppError::invalid(
                    "not_allowed",
                    "order.user_id",
                    "users quote their own orders",
                ))
            }
            Principal::User(_) => true,
            _ => false,
        };
        if req.code.is_some() {
            // A code looked up here is a redemption attempt as far as guessing goes.
            let ip = req.ip.filter(|_| by_user);
            self.redeem_limits().check(&order.user_id, ip).await?;
        }
        if req
            .coupon_ids
            .as_ref()
            .is_some_and(|ids| ids.len() > MAX_WALLET as usize)
        {
            return Err(AppError::invalid(
                "too_many",
                "coupon_ids",
                "at most 500 coupons per quote",
            ));
        }
        let code = match &req.code {
            Some(c) => Some(self.preview(order, c).await?),
            None => None,
        };
        let quote = self
            .checkout()
            .quote(order, req.coupon_ids.as_deref(), self.cached_templates())
            .await
            .map_err(|e| match e {
                QuoteError::NotTheUsers(i) => AppError::invalid(
                    "unknown_coupon",
                    &format!("coupon_ids[{i}]"),
                    "no coupon of the order's user has this id",
                ),
                QuoteError::Store(e) => e.into(),
            })?;
        Ok((quote, code))
    }

    /// What redeeming `typed` would give the order's user on this order. A code that cannot
    /// be redeemed gets the one answer redemption gives.
    async fn preview(&self, order: &Order, typed: &str) -> AppResult<CodePreview> {
        let code = TypedCode::parse(typed).map_err(|_| AppError::unusable_code())?;
        let now = self.now();
        let (found, template) =
            redemption::find_usable(self.store(), self, &code, &order.user_id, now).await?;
        // Previewed for an order: a code already redeemed (even by this user) offers nothing
        // new.
        if found.redeemed_by.is_some() {
            return Err(AppError::unusable_code());
        }
        let (valid_from, valid_until) = template.spec.validity.for_claim(now);
        let would_be = Coupon {
            id: CouponId::new(i64::MAX).map_err(|e| AppError::Internal(e.into()))?,
            template_id: template.id,
            user_id: order.user_id.clone(),
            stored_status: CouponStatus::Unused,
            claimed_at: now,
            valid_from,
            valid_until,
            code: Some(found.code.clone()),
            order_id: None,
            locked_until: None,
            discount: None,
            used_at: None,
        };
        let usage = TemplateUse::of(&template);
        let customer = self
            .checkout()
            .customer_for(&order.user_id, &[&template])
            .await?;
        let situation = Situation {
            zone: self.zone(),
            customer: customer.as_ref(),
        };
        let (reasons, unmet) = eligibility(order, now, situation, &would_be, usage);
        let amount = if reasons.is_empty() {
            discount(order, usage).map_or(Money::ZERO, |d| d.discount)
        } else {
            Money::ZERO
        };
        Ok(CodePreview {
            code: found.code,
            template_id: template.id,
            applicable: reasons.is_empty(),
            reasons,
            unmet,
            discount: amount,
        })
    }
}
