//! Campaign messages from a template's page: a merchant sends one to the template's holders
//! with the form, sees what it was sent to, then how many inboxes it reached once sent; what
//! the API refuses (an empty title) is shown at the form and nothing is sent.

mod support;

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use coupond_api::AppSettings;
use coupond_domain::messaging::Locale;
use coupond_domain::Zone;
use coupond_engine::messaging::{CampaignSender, MessagingRules};
use coupond_engine::{Pass, Worker};
use coupond_store::Role;
use serde_json::json;

use support::{
    answer, app_with_settings, csrf_of, form_post, key, merchant, page_get, published,
    sign_in_cookie, template_body, v1,
};

#[tokio::test]
async fn a_merchant_sends_a_message_to_its_holders_from_the_template_page() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let (skey, _) = key(&app, Role::Service, None).await;
    let t = published(
        &app,
        &mkey,
        template_body("Spring", 10, "2026-12-31T00:00:00Z"),
    )
    .await;
    app.clock
        .set(coupond_domain::Timestamp::parse("2026-11-24T14:00:00Z").unwrap());
    for u in ["u-1", "u-2"] {
        let path = format!("/v1/templates/{t}/claims");
        let (status, body) = v1(&app, &skey, Method::POST, &path, json!({"user_id": u})).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let cookie = sign_in_cookie(&app, &mkey).await;
    let page = format!("/console/templates/{t}");
    let shown = answer(&app, page_get(&page, &cookie)).await;
    assert!(
        shown.body.contains("No message sent about it yet."),
        "{}",
        shown.body
    );
    assert!(
        shown.body.contains("id=\"campaign-form\""),
        "{}",
        shown.body
    );
    let csrf = csrf_of(&shown.body);
    let send = format!("{page}/messages");

    let refused = answer(
        &app,
        form_post(
            &send,
            Some(&cookie),
            format!("csrf={csrf}&title=+&message=Hi"),
        ),
    )
    .await;
    // 200, for htmx to show it.
    assert_eq!(refused.status, StatusCode::OK);
    assert!(
        refused.body.contains("id=\"campaign-error\"") && refused.body.contains("title:"),
        "{}",
        refused.body
    );

    let form = format!("csrf={csrf}&title=Last+days&message=Ends+Sunday.");
    let sent = answer(&app, form_post(&send, Some(&cookie), form)).await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.body);
    assert!(
        sent.body
            .contains("“Last days” is being sent to its holders"),
        "{}",
        sent.body
    );
    let rules = MessagingRules {
        readers: coupond_engine::messaging::Readers {
            zone: Zone::UTC,
            locale: Locale::parse("en").unwrap(),
        },
        channels: vec![],
    };
    let sender = CampaignSender::new(
        app.store.clone(),
        Arc::new(app.clock.clone()),
        rules,
        "test",
        Arc::default(),
    );
    while sender.pass().await.unwrap() == Pass::Busy {}
    let shown = answer(&app, page_get(&page, &cookie)).await;
    let row = shown
        .body
        .split("id=\"campaign-")
        .find(|r| r.contains("Last days"))
        .unwrap_or_else(|| panic!("no row: {}", shown.body));
    assert!(
        row.contains(">sent<") && row.contains("<td class=\"num\">2</td>"),
        "{row}"
    );
}
