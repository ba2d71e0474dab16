//! A few hours of history for the demo, so that every console screen shows something: a live
//! template of the first merchant claimed hour by hour since 11 hours ago, one order that
//! used a coupon, one used and then refunded, and a finished bulk issuance job.
//!
//! The history is written with instants in the past through the same store and engine calls
//! the service uses (a [`ManualClock`] set back in time for the engine's parts), so it obeys
//! every rule and the audit finds nothing.

use std::sync::Arc;

use anyhow::Context;
use coupond_domain::{
    Actor, Merchant, Order, OrderDraft, OrderId, Source, TemplateContext, TemplateDraft,
    TemplateSpec, Timestamp, UserId,
};
use coupond_engine::{Checkout, IssuanceWorker, ManualClock};
use coupond_store::{ClaimOutcome, ClaimRequest, NewIssuance, NewTemplate, Store};
use serde_json::json;
use time::Duration;

/// The `source` of every third claim (the rest give none).
const DEMO_SOURCES: [Option<&str>; 3] = [None, Some("app-home"), Some("sms-spring")];

/// Claims in each of the last 11 hours, oldest first.
const PER_HOUR: [usize; 11] = [3, 5, 8, 4, 12, 9, 15, 7, 10, 6, 11];

/// Writes the history for `merchant`, ending at `now`.
pub async fn seed(
    store: &Arc<dyn Store>,
    merchant: &Merchant,
    now: Timestamp,
    freeze: Duration,
) -> anyhow::Result<()> {
    let start = now.plus(Duration::hours(-12));
    let draft: TemplateDraft = serde_json::from_value(json!({
        "title": "Welcome: 100 off your first month",
        "description": "For new tenants of Westlake Apartments.",
        "value": {"kind": "amount_off", "amount": 10_000},
        "threshold": 200_000,
        "cities": [1],
        "total_stock": 500,
        "per_user_limit": 1,
        "claim_window": {"start": start, "end": now.plus(Duration::days(30))},
        "validity": {"type": "relative", "days": 30},
    }))?;
    let ctx = TemplateContext {
        owner: Some(merchant),
        activity: None,
        now: start,
        freeze,
        rule: None,
    };
    let spec = TemplateSpec::validate(draft, ctx).map_err(|e| anyhow::anyhow!("{e}"))?;
    let new = NewTemplate {
        merchant_id: Some(merchant.id),
        spec: &spec,
        activity_version: None,
        review: Default::default(),
    };
    let t = store.insert_template(&new, start).await?;
    let t = store.publish_template(t.id, t.version, start).await?;
    let mut coupons = Vec::new();
    for (i, n) in PER_HOUR.iter().enumerate() {
        let at = now.plus(Duration::hours(i as i64 - 11) + Duration::minutes(10));
        let (valid_from, valid_until) = t.spec.validity.for_claim(at);
        let claims: Vec<ClaimRequest> = (0..*n)
            .map(|k| {
                let user =
                    UserId::parse(&format!("u-2{i:02}{k:02}")).map_err(anyhow::Error::msg)?;
                Ok(ClaimRequest {
                    actor: Actor::User(user.clone()),
                    user,
                    valid_from,
                    valid_until,
                    idempotency: None,
                    code: None,
                    issuance: None,
                    channel: Default::default(),
                    // Some claims came from the app's home page, some from an SMS
                    // campaign: the performance report's channels.
                    source: DEMO_SOURCES[k % 3]
                        .map(|s| Source::parse(s).map_err(anyhow::Error::msg))
                        .transpose()?,
                })
            })
            .collect::<anyhow::Result<_>>()?;
        for out in store.claim_batch(t.id, &claims, at).await? {
            if let ClaimOutcome::Issued(c) = out {
                coupons.push(c);
            }
        }
    }
    // Two orders: one keeps its coupon, the other is refunded an hour later.
    for (k, coupon) in coupons.iter().take(2).enumerate() {
        let at = now.plus(Duration::hours(k as i64 - 3));
        let checkout = Checkout::new(
            store.clone(),
            Arc::new(ManualClock::new(at)),
            Duration::minutes(15),
            Duration::days(7),
        );
        let order_id =
            OrderId::parse(&format!("demo-order-{}", k + 1)).map_err(anyhow::Error::msg)?;
        let order = Order::try_from(serde_json::from_value::<OrderDraft>(json!({
            "user_id": coupon.user_id,
            "city_id": 1,
            "lines": [{"product_id": "westlake-room-1", "merchant_id": merchant.id, "category_id": 1, "unit_price": 450_000,
                       "quantity": 1, "kind": "rent"}],
        }))?)
        .map_err(|e| anyhow::anyhow!("demo order: {e}"))?;
        let actor = Actor::Service;
        checkout
            .lock(&order_id, &order, &[coupon.id], None, [k as u8; 32], &actor)
            .await
            .context("locking a demo order")?;
        checkout
            .confirm(&order_id, &actor)
            .await
            .context("confirming a demo order")?;
        if k == 1 {
            let refund_at = at.plus(Duration::hours(1));
            coupond_engine::lifecycle::refund_order(
                store.as_ref(),
                &order_id,
                None,
                None,
                &actor,
                refund_at,
            )
            .await
            .map_err(|e| anyhow::anyhow!("refunding a demo order: {e:?}"))?;
        }
    }
    // A bulk issuance job, done half an hour ago.
    let at = now.plus(Duration::minutes(-30));
    let users: Vec<UserId> = (0..40)
        .map(|i| UserId::parse(&format!("u-3{i:03}")).map_err(anyhow::Error::msg))
        .collect::<anyhow::Result<_>>()?;
    let (job, _) = store
        .insert_issuance(
            &NewIssuance {
                template: t.id,
                actor: &Actor::Merchant(merchant.id),
                users: &users,
                duplicates: 0,
                invalid: 0,
                invalid_lines: &[],
                key: None,
            },
            at,
        )
        .await?;
    IssuanceWorker::new(
        store.clone(),
        Arc::new(ManualClock::new(at)),
        std::time::Duration::ZERO,
    )
    .finish(job.id)
    .await?;
    Ok(())
}
