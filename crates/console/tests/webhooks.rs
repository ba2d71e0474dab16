//! Webhooks from the console (issue 33 point 9): an owner adds an endpoint through the form
//! (its signing secret shown once), sends it a test (a `webhook.ping` delivery, listed with
//! the endpoint's deliveries), disables it and deletes it, each asked first where it cannot be
//! undone; a bad URL or no event type is named at its field; merchant staff, whose role does
//! not manage webhooks, see the endpoints and no form.

mod support;

use axum::http::StatusCode;
use coupond_api::AppSettings;
use coupond_domain::OperatorRole;
use coupond_store::{Role, StoreError};

use support::{
    account, account_cookie, answer, app_with_settings, csrf_of, form_post, key, merchant,
    page_get, sign_in_cookie, App,
};

const URL: &str = "http://93.184.216.34/coupond";

async fn page(app: &App, cookie: &str) -> String {
    let a = answer(app, page_get("/console/webhooks", cookie)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    a.body
}

/// Posts `form` (after the form token) to `path`.
async fn post(app: &App, cookie: &str, path: &str, form: &str) -> support::Answer {
    let csrf = csrf_of(&page(app, cookie).await);
    let body = format!("csrf={csrf}&{form}");
    answer(app, form_post(path, Some(cookie), body)).await
}

#[tokio::test]
async fn an_endpoint_is_added_tested_disabled_and_deleted_from_the_console() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let cookie = sign_in_cookie(&app, &mkey).await;
    assert!(page(&app, &cookie).await.contains("id=\"webhook-form\""));

    let form = format!(
        "url={}&event_types=coupon.claimed&event_types=coupon.used",
        URL.replace(':', "%3A").replace('/', "%2F")
    );
    let added = post(&app, &cookie, "/console/webhooks", &form).await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.body);
    assert!(
        added.body.contains("id=\"new-webhook-secret\">whsec_"),
        "{}",
        added.body
    );
    let hooks = app.store.list_webhooks(Some(m)).await.unwrap();
    let id = hooks[0].id;
    assert_eq!(hooks[0].event_types, ["coupon.claimed", "coupon.used"]);
    let listed = page(&app, &cookie).await;
    assert!(listed.contains(URL), "{listed}");
    assert!(!listed.contains("whsec_"), "the secret is shown once");
    assert!(
        listed.contains("data-confirm=\"Delete this endpoint")
            && listed.contains("data-confirm=\"Disable this endpoint"),
        "{listed}"
    );

    let pinged = post(&app, &cookie, &format!("/console/webhooks/{id}/ping"), "").await;
    assert_eq!(pinged.status, StatusCode::SEE_OTHER, "{}", pinged.body);
    let listed = page(&app, &cookie).await;
    let card = &listed[listed.find(&format!("id=\"webhook-{id}\"")).unwrap()..];
    assert!(card.contains("<td>webhook.ping</td>"), "{card}");
    assert!(
        card.contains("<span class=\"badge pending\">pending</span>"),
        "{card}"
    );

    let off = post(
        &app,
        &cookie,
        &format!("/console/webhooks/{id}/disable"),
        "",
    )
    .await;
    assert_eq!(off.status, StatusCode::SEE_OTHER, "{}", off.body);
    let listed = page(&app, &cookie).await;
    assert!(listed.contains("badge aborted\">disabled"), "{listed}");
    assert!(!listed.contains(&format!("id=\"ping-{id}\"")), "{listed}");
    assert!(listed.contains(&format!("id=\"delete-{id}\"")), "{listed}");

    let gone = post(&app, &cookie, &format!("/console/webhooks/{id}/delete"), "").await;
    assert_eq!(gone.status, StatusCode::SEE_OTHER, "{}", gone.body);
    assert!(!page(&app, &cookie).await.contains(URL));
    assert!(matches!(
        app.store.webhook(id).await,
        Err(StoreError::NotFound)
    ));
}

#[tokio::test]
async fn a_refused_endpoint_is_named_at_its_field() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let cookie = sign_in_cookie(&app, &mkey).await;
    let bad = post(
        &app,
        &cookie,
        "/console/webhooks",
        "url=ftp%3A%2F%2Fx&event_types=*",
    )
    .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.body);
    assert!(bad.body.contains("data-field=\"url\""), "{}", bad.body);
    assert!(
        bad.body.contains("value=\"ftp://x\""),
        "the form keeps what was typed"
    );
    let none = post(
        &app,
        &cookie,
        "/console/webhooks",
        "url=http%3A%2F%2F93.184.216.34%2F",
    )
    .await;
    assert_eq!(
        none.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        none.body
    );
    assert!(
        none.body.contains("data-field=\"event_types\""),
        "{}",
        none.body
    );
    assert!(app.store.list_webhooks(Some(m)).await.unwrap().is_empty());
}

#[tokio::test]
async fn staff_see_endpoints_and_no_forms() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let owner = sign_in_cookie(&app, &mkey).await;
    let form = format!(
        "url={}&event_types=*",
        URL.replace(':', "%3A").replace('/', "%2F")
    );
    let added = post(&app, &owner, "/console/webhooks", &form).await;
    assert_eq!(added.status, StatusCode::CREATED, "{}", added.body);
    let id = app.store.list_webhooks(Some(m)).await.unwrap()[0].id;

    account(&app, "staff@m.example", OperatorRole::Staff, Some(m)).await;
    let staff = account_cookie(&app, "staff@m.example").await;
    let seen = page(&app, &staff).await;
    assert!(seen.contains(URL), "{seen}");
    for form in ["webhook-form", "ping-", "disable-", "delete-"] {
        assert!(!seen.contains(&format!("id=\"{form}")), "{form}: {seen}");
    }
    let refused = post(&app, &staff, &format!("/console/webhooks/{id}/delete"), "").await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    assert!(app.store.webhook(id).await.is_ok());
}
