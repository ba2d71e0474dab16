//! The coupon centre's rules: on offer only while published and in the claim window, audiences
//! by list and by tag, and what a user is told about the stock and its own limit.

use super::*;
use crate::coupon::{CouponValue, Coverage, DeductionMode, Stacking, Validity};
use crate::ids::{CityId, CitySet, TemplateId};
use crate::money::Money;
use crate::template::{Review, TemplateDraft, TemplateSpec};
use crate::time::Window;

fn t(s: &str) -> Timestamp {
    Timestamp::parse(s).unwrap()
}

fn user(u: &str) -> UserId {
    UserId::parse(u).unwrap()
}

fn tag(s: &str) -> Tag {
    Tag::parse(s).unwrap()
}

/// A published standalone template claimable in April 2026, 10 in stock, 2 per user.
fn template(audience: Audience) -> Template {
    let window = Window::new(t("2026-04-01T00:00:00Z"), t("2026-04-10T00:00:00Z")).unwrap();
    let draft = TemplateDraft {
        conditions: None,
        use_limits: Vec::new(),
        stacking_group: None,
        rule_id: None,
        priority: Default::default(),
        activity_id: None,
        title: "20 off".into(),
        description: String::new(),
        value: CouponValue::AmountOff {
            amount: Money::new(2000).unwrap(),
        },
        threshold: Money::ZERO,
        deduction: DeductionMode::Upfront,
        scope: Coverage::All.into(),
        cities: CitySet::new(vec![CityId::new(1).unwrap()]).unwrap(),
        audience,
        total_stock: 10,
        per_user_limit: 2,
        stacking: Stacking::Exclusive,
        claim_window: Some(window),
        validity: Validity::Relative { days: 30 },
        budget: None,
        metadata: Default::default(),
        refund_policy: Default::default(),
        reminder_days_before: None,
        reference: Default::default(),
    };
    Template {
        id: TemplateId::new(1).unwrap(),
        merchant_id: None,
        spec: TemplateSpec::from_stored(draft, window).unwrap(),
        claimed: 0,
        used: 0,
        given: Money::ZERO,
        reserved: Money::ZERO,
        created_at: t("2026-03-01T00:00:00Z"),
        updated_at: t("2026-03-01T00:00:00Z"),
        published_at: Some(t("2026-03-01T00:00:00Z")),
        aborted_at: None,
        review: Review::NotNeeded,
        pause: None,
        version: 1,
    }
}

#[test]
fn on_offer_only_while_published_and_in_the_claim_window() {
    let open = template(Audience::Everyone);
    assert!(!on_offer(&open, t("2026-03-31T23:59:59Z")), "not started");
    assert!(on_offer(&open, t("2026-04-01T00:00:00Z")));
    assert!(!on_offer(&open, t("2026-04-10T00:00:00Z")), "ended");
    let draft = Template {
        published_at: None,
        ..open.clone()
    };
    assert!(!on_offer(&draft, t("2026-04-02T00:00:00Z")));
    let pending = Template {
        review: Review::Pending,
        ..open.clone()
    };
    assert!(!on_offer(&pending, t("2026-04-02T00:00:00Z")));
    let paused = Template {
        pause: Some(crate::Pause {
            at: t("2026-04-01T12:00:00Z"),
            reason: None,
            scope: crate::PauseScope::Template,
        }),
        ..open.clone()
    };
    assert!(!on_offer(&paused, t("2026-04-02T00:00:00Z")), "paused");
    let aborted = Template {
        aborted_at: Some(t("2026-04-01T12:00:00Z")),
        ..open
    };
    assert!(!on_offer(&aborted, t("2026-04-02T00:00:00Z")));
}

#[test]
fn audiences_admit_listed_users_and_tag_holders_only() {
    let everyone = template(Audience::Everyone);
    assert!(shows_template(&everyone, &user("u-1"), &[]));
    let listed = Audience::Users {
        ids: vec![user("u-1")],
    };
    assert!(admits(&listed, &user("u-1"), &[]));
    assert!(!admits(&listed, &user("u-2"), &[tag("vip")]));
    let tagged = template(Audience::Tags {
        any: vec![tag("vip"), tag("student")],
    });
    assert!(shows_template(&tagged, &user("u-2"), &[tag("student")]));
    assert!(!shows_template(&tagged, &user("u-2"), &[tag("new")]));
    assert!(!shows_template(&tagged, &user("u-2"), &[]));
    let draft = Template {
        published_at: None,
        ..everyone
    };
    assert!(
        !shows_template(&draft, &user("u-1"), &[]),
        "a draft is absent"
    );
}

#[test]
fn chances_say_what_is_left_and_whether_the_user_may_claim() {
    let now = t("2026-04-02T00:00:00Z");
    let mut tpl = template(Audience::Everyone);
    tpl.claimed = 7;
    let c = Chances::of(&tpl, 1, false, now);
    assert_eq!(
        (c.remaining, c.sold_out, c.held, c.can_claim),
        (3, false, 1, true)
    );
    assert!(!Chances::of(&tpl, 2, false, now).can_claim, "at the limit");
    let seen = Chances::of(&tpl, 0, true, now);
    assert_eq!(
        (seen.remaining, seen.sold_out, seen.can_claim),
        (0, true, false)
    );
    tpl.claimed = 10;
    assert!(Chances::of(&tpl, 0, false, now).sold_out);
    tpl.claimed = 0;
    let later = t("2026-04-10T00:00:00Z");
    assert!(
        !Chances::of(&tpl, 0, false, later).can_claim,
        "window closed"
    );
}
