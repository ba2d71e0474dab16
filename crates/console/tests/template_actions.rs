//! A template's page offers exactly the actions the API's answer names: an ended template
//! can still be aborted and get codes (the page used to hide both), a claimable one can have
//! its stock raised, and a platform `finance` account, whose role changes nothing, is
//! offered no action at all.

mod support;

use axum::http::{Method, StatusCode};
use coupond_api::AppSettings;
use coupond_domain::OperatorRole;
use coupond_store::Role;

use support::{
    account, account_cookie, answer, app_with_settings, key, merchant, page_get, sign_in_cookie,
    template_body, v1, App,
};
const BUTTONS: [&str; 7] = [
    "id=\"publish\"",
    "id=\"delete\"",
    "id=\"top-up\"",
    "id=\"abort\"",
    "id=\"extend\"",
    "id=\"codes-form\"",
    "id=\"issuance-form\"",
];

async fn page(app: &App, cookie: &str, id: i64) -> String {
    let a = answer(app, page_get(&format!("/console/templates/{id}"), cookie)).await;
    assert_eq!(a.status, StatusCode::OK);
    a.body
}

fn offered(page: &str) -> Vec<&'static str> {
    BUTTONS.into_iter().filter(|b| page.contains(b)).collect()
}

#[tokio::test]
async fn the_page_offers_what_the_api_accepts() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    // Claimable from 13:00 (an hour after the clock's start) to the 30th.
    let body = template_body("Spring", 10, "2026-12-31T00:00:00Z");
    let (status, t) = v1(&app, &mkey, Method::POST, "/v1/templates", body).await;
    assert_eq!(status, StatusCode::CREATED, "{t}");
    let id = t["id"].as_i64().unwrap();
    // Sessions last an hour: each look after the clock moves signs in again.
    let merchant_cookie = sign_in_cookie(&app, &mkey).await;
    assert_eq!(
        offered(&page(&app, &merchant_cookie, id).await),
        [
            "id=\"publish\"",
            "id=\"delete\"",
            "id=\"top-up\"",
            "id=\"abort\"",
            "id=\"extend\"",
            "id=\"codes-form\"",
            "id=\"issuance-form\""
        ],
        "a draft"
    );
    let publish = format!("/v1/templates/{id}/publish");
    let (status, _) = v1(&app, &mkey, Method::POST, &publish, serde_json::json!({})).await;
    assert_eq!(status, StatusCode::OK);
    app.clock.advance(time::Duration::hours(2));
    let merchant_cookie = sign_in_cookie(&app, &mkey).await;
    let claimable = offered(&page(&app, &merchant_cookie, id).await);
    assert!(claimable.contains(&"id=\"top-up\"") && !claimable.contains(&"id=\"publish\""));
    // Past the claim window (the 30th): ended, still abortable, codes still open.
    app.clock.advance(time::Duration::days(7));
    let merchant_cookie = sign_in_cookie(&app, &mkey).await;
    assert_eq!(
        offered(&page(&app, &merchant_cookie, id).await),
        ["id=\"abort\"", "id=\"codes-form\""],
        "ended"
    );

    account(&app, "fin@example.com", OperatorRole::Finance, None).await;
    let finance = account_cookie(&app, "fin@example.com").await;
    assert!(offered(&page(&app, &finance, id).await).is_empty());
}

/// A draft's Delete, from its page: it asks first, and the draft is gone.
#[tokio::test]
async fn a_draft_is_deleted_from_its_page() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let body = template_body("Never mind", 10, "2026-12-31T00:00:00Z");
    let (_, t) = v1(&app, &mkey, Method::POST, "/v1/templates", body).await;
    let id = t["id"].as_i64().unwrap();
    let cookie = sign_in_cookie(&app, &mkey).await;
    let draft = page(&app, &cookie, id).await;
    assert!(
        draft.contains("data-confirm=\"Delete this draft?"),
        "{draft}"
    );
    let csrf = support::csrf_of(&draft);
    let path = format!("/console/templates/{id}/delete");
    let a = answer(
        &app,
        support::form_post(&path, Some(&cookie), format!("csrf={csrf}")),
    )
    .await;
    assert_eq!(a.status, StatusCode::SEE_OTHER, "{}", a.body);
    let (status, _) = v1(
        &app,
        &mkey,
        Method::GET,
        &format!("/v1/templates/{id}"),
        serde_json::json!({}),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// Pause, resume and stop from a live template's page: the pause shows with its reason,
/// Resume lifts it, Stop ends claiming and leaves neither button.
#[tokio::test]
async fn a_live_template_is_paused_resumed_and_stopped_from_its_page() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let body = template_body("Spring", 10, "2026-12-31T00:00:00Z");
    let (_, t) = v1(&app, &mkey, Method::POST, "/v1/templates", body).await;
    let id = t["id"].as_i64().unwrap();
    let publish = format!("/v1/templates/{id}/publish");
    v1(&app, &mkey, Method::POST, &publish, serde_json::json!({})).await;
    app.clock.advance(time::Duration::hours(2));
    let cookie = sign_in_cookie(&app, &mkey).await;
    let post = |action: &str, form: String| {
        let path = format!("/console/templates/{id}/{action}");
        support::form_post(&path, Some(&cookie), form)
    };

    let live = page(&app, &cookie, id).await;
    assert!(
        live.contains("id=\"pause\"") && live.contains("id=\"stop\""),
        "{live}"
    );
    assert!(!live.contains("id=\"resume\""));
    let csrf = support::csrf_of(&live);
    let a = answer(
        &app,
        post("pause", format!("csrf={csrf}&reason=stock+recount")),
    )
    .await;
    assert_eq!(a.status, StatusCode::SEE_OTHER, "{}", a.body);
    let paused = page(&app, &cookie, id).await;
    assert!(paused.contains("Claims paused since"), "{paused}");
    assert!(paused.contains(": stock recount."), "{paused}");
    assert!(paused.contains("id=\"resume\"") && !paused.contains("id=\"pause\""));

    let a = answer(&app, post("resume", format!("csrf={csrf}"))).await;
    assert_eq!(a.status, StatusCode::SEE_OTHER, "{}", a.body);
    let resumed = page(&app, &cookie, id).await;
    assert!(!resumed.contains("Claims paused since") && resumed.contains("id=\"pause\""));

    let a = answer(&app, post("stop", format!("csrf={csrf}"))).await;
    assert_eq!(a.status, StatusCode::SEE_OTHER, "{}", a.body);
    let stopped = page(&app, &cookie, id).await;
    assert!(stopped.contains("id=\"status\">ended<"), "{stopped}");
    assert!(!stopped.contains("id=\"stop\"") && !stopped.contains("id=\"pause\""));
}
