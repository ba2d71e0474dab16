//! The Messages page (the platform's admins): every kind's text in English and Simplified
//! Chinese, edited with a preview and reverted; the delivery log with what was sent and what
//! failed; and a user's contact points and choices on the support page.

mod support;

use axum::http::StatusCode;
use coupond_api::AppSettings;
use coupond_domain::messaging::{Channel, Contact, ContactDraft, MessageKind, Preferences};
use coupond_domain::{OperatorRole, UserId, Zone};
use coupond_store::{NewOutbound, OutboundStep};

use support::{account, account_cookie, answer, app_with_settings, csrf_of, form_post, page_get};

fn queued(key: &str, address: &str) -> NewOutbound {
    NewOutbound {
        channel: Channel::Email,
        key: key.into(),
        user_id: Some(UserId::parse("u-9").unwrap()),
        kind: MessageKind::CouponClaimed,
        address: address.into(),
        zone: Zone::UTC,
        subject: format!("Your coupon for {address}"),
        body: "You claimed it.".into(),
        due_at: coupond_store::testing::fixtures::at(1),
    }
}

#[tokio::test]
async fn admins_edit_texts_with_a_preview_and_read_the_delivery_log() {
    let app = app_with_settings(AppSettings::default()).await;
    account(&app, "ada@example.com", OperatorRole::Admin, None).await;
    let cookie = account_cookie(&app, "ada@example.com").await;
    let page = answer(&app, page_get("/console/messages", &cookie)).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(
        page.body.contains("id=\"text-coupon_claimed-en\""),
        "{}",
        page.body
    );
    assert!(page.body.contains("领取成功：{{title}}"), "{}", page.body);
    assert!(page.body.contains("No email or SMS yet."), "{}", page.body);
    assert!(page.body.contains("id=\"menu-messages\""), "{}", page.body);
    let csrf = csrf_of(&page.body);

    // Preview: the text filled with sample values, or what is wrong with it.
    let form = |subject: &str| {
        format!(
            "csrf={csrf}&subject={}&body=Yours%3A+%7B%7Btitle%7D%7D&sms=ok",
            subject
        )
    };
    let shown = answer(
        &app,
        form_post(
            "/console/messages/texts/coupon_claimed/en/preview",
            Some(&cookie),
            form("Got+%7B%7Bvalue%7D%7D"),
        ),
    )
    .await;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.body);
    assert!(shown.body.contains("Got 20.00 off"), "{}", shown.body);
    let wrong = answer(
        &app,
        form_post(
            "/console/messages/texts/coupon_claimed/en/preview",
            Some(&cookie),
            form("Hi+%7B%7Bname%7D%7D"),
        ),
    )
    .await;
    assert!(
        wrong.body.contains("is not a variable of coupon_claimed"),
        "{}",
        wrong.body
    );

    // Saved: the page shows the platform's own text; reverted: the shipped one again.
    let saved = answer(
        &app,
        form_post(
            "/console/messages/texts/coupon_claimed/en",
            Some(&cookie),
            form("Got+%7B%7Bvalue%7D%7D"),
        ),
    )
    .await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.body);
    let page = answer(&app, page_get("/console/messages", &cookie)).await;
    assert!(page.body.contains("Got {{value}}"), "{}", page.body);
    assert!(page.body.contains(">own<"), "{}", page.body);
    let reverted = answer(
        &app,
        form_post(
            "/console/messages/texts/coupon_claimed/en/revert",
            Some(&cookie),
            format!("csrf={csrf}"),
        ),
    )
    .await;
    assert_eq!(reverted.status, StatusCode::SEE_OTHER, "{}", reverted.body);
    let page = answer(&app, page_get("/console/messages", &cookie)).await;
    assert!(!page.body.contains(">own<"), "{}", page.body);

    // The log: one sent, one failed with the provider's answer; filtered by status.
    let now = coupond_store::testing::fixtures::at(1);
    app.store
        .queue_outbound(
            &[
                queued("event:1", "ann@example.com"),
                queued("event:2", "bad@example.com"),
            ],
            now,
        )
        .await
        .unwrap();
    let due = app
        .store
        .due_outbound(Channel::Email, now, 10)
        .await
        .unwrap();
    app.store
        .record_outbound(
            due[0].id,
            &OutboundStep::Sent {
                answer: "250 queued as 7F3".into(),
            },
            now,
        )
        .await
        .unwrap();
    app.store
        .record_outbound(
            due[1].id,
            &OutboundStep::Failed {
                answer: "550 no such user".into(),
            },
            now,
        )
        .await
        .unwrap();
    let page = answer(&app, page_get("/console/messages", &cookie)).await;
    assert!(
        page.body.contains("Your coupon for ann@example.com"),
        "{}",
        page.body
    );
    assert!(page.body.contains("250 queued as 7F3"), "{}", page.body);
    let failed = answer(&app, page_get("/console/messages?status=failed", &cookie)).await;
    assert!(failed.body.contains("550 no such user"), "{}", failed.body);
    assert!(!failed.body.contains("ann@example.com"), "{}", failed.body);
}

#[tokio::test]
async fn support_sees_a_users_contact_points_and_choices() {
    let app = app_with_settings(AppSettings::default()).await;
    account(&app, "sue@example.com", OperatorRole::Support, None).await;
    let cookie = account_cookie(&app, "sue@example.com").await;
    let user = UserId::parse("u-9").unwrap();
    let contact = Contact::try_from(ContactDraft {
        email: Some("u9@example.com".into()),
        phone: Some("+8613800138000".into()),
        locale: Some("zh-Hans".into()),
        time_zone: Some("Asia/Shanghai".into()),
    })
    .unwrap();
    let now = coupond_store::testing::fixtures::at(1);
    app.store.put_contact(&user, &contact, now).await.unwrap();
    let mut prefs = Preferences::default();
    prefs.unsubscribe(Channel::Sms);
    app.store.put_preferences(&user, &prefs, now).await.unwrap();
    let page = answer(&app, page_get("/console/users?user=u-9", &cookie)).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(
        page.body.contains("id=\"contact-email\">u9@example.com"),
        "{}",
        page.body
    );
    assert!(page.body.contains("+8613800138000"), "{}", page.body);
    assert!(page.body.contains("Asia/Shanghai"), "{}", page.body);
    assert!(page.body.contains("sms campaign: off"), "{}", page.body);
}
