//! What the load-test scenarios set up directly in the database before they drive the server:
//! a merchant, and published templates built from one base draft.

use coupond_domain::{
    Audience, CityId, CitySet, CouponValue, Coverage, DeductionMode, Merchant, MerchantDraft,
    Money, Stacking, Template, TemplateContext, TemplateDraft, TemplateSpec, Timestamp, Validity,
    Window,
};
use coupond_store::{NewTemplate, Store};

/// A merchant serving city 1.
pub(super) async fn merchant(
    store: &dyn Store,
    name: &str,
    now: Timestamp,
) -> anyhow::Result<Merchant> {
    let draft = MerchantDraft {
        name: name.into(),
        short_name: name.split_whitespace().next().unwrap_or("Load").into(),
        cities: CitySet::new(vec![CityId::new(1).map_err(anyhow::Error::msg)?])
            .map_err(anyhow::Error::msg)?,
    };
    Ok(store.insert_merchant(&draft, now).await?)
}

/// A standalone template of `merchant`: 10.00 off, everyone, claimable from a minute ago for a
/// day, coupons valid 7 days; the scenario changes what it needs.
pub(super) fn draft(
    merchant: &Merchant,
    title: String,
    now: Timestamp,
) -> anyhow::Result<TemplateDraft> {
    let window = Window::new(
        now.minus(time::Duration::minutes(1)),
        now.plus(time::Duration::days(1)),
    )
    .map_err(anyhow::Error::msg)?;
    Ok(TemplateDraft {
        conditions: None,
        use_limits: Vec::new(),
        stacking_group: None,
        rule_id: None,
        priority: Default::default(),
        activity_id: None,
        title,
        description: String::new(),
        value: CouponValue::AmountOff {
            amount: Money::new(1000).map_err(anyhow::Error::msg)?,
        },
        threshold: Money::ZERO,
        deduction: DeductionMode::Upfront,
        scope: Coverage::All.into(),
        cities: merchant.cities.clone(),
        audience: Audience::Everyone,
        total_stock: 1,
        per_user_limit: 1,
        stacking: Stacking::Exclusive,
        claim_window: Some(window),
        validity: Validity::Relative { days: 7 },
        budget: None,
        metadata: Default::default(),
        refund_policy: Default::default(),
        reminder_days_before: None,
        reference: Default::default(),
    })
}

/// Validates `draft` as the API would, inserts it and publishes it.
pub(super) async fn publish(
    store: &dyn Store,
    merchant: &Merchant,
    draft: TemplateDraft,
    now: Timestamp,
) -> anyhow::Result<Template> {
    let ctx = TemplateContext {
        owner: Some(merchant),
        activity: None,
        now,
        freeze: time::Duration::minutes(5),
        rule: None,
    };
    let spec = TemplateSpec::validate(draft, ctx)
        .map_err(|e| anyhow::anyhow!("load test template: {e}"))?;
    let new = NewTemplate {
        merchant_id: Some(merchant.id),
        spec: &spec,
        activity_version: None,
        review: Default::default(),
    };
    let t = store.insert_template(&new, now).await?;
    Ok(store.publish_template(t.id, t.version, now).await?)
}
