//! The approval queue in the console: a merchant's enrollment in an activity that requires
//! approval is listed on the platform's Approvals page; its page offers Approve and Reject to
//! the platform and neither to the merchant; a rejection's reason is what the merchant then
//! reads on the template's page; an empty reason is refused in words and changes nothing.

mod support;

use axum::http::{Method, StatusCode};
use coupond_api::AppSettings;
use coupond_store::Role;
use serde_json::json;

use support::{
    answer, app_with_settings, csrf_of, form_post, key, merchant, page_get, sign_in_cookie, v1, App,
};

async fn page(app: &App, cookie: &str, path: &str) -> String {
    let a = answer(app, page_get(path, cookie)).await;
    assert_eq!(a.status, StatusCode::OK, "{path}: {}", a.body);
    a.body
}

#[tokio::test]
async fn the_platform_decides_and_the_merchant_reads_why() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let (pkey, _) = key(&app, Role::Platform, None).await;
    let activity = json!({
        "title": "Winter rentals", "cities": [1], "kind": "amount_off",
        "value_min": 100, "value_max": 5000,
        "enrollment": {"start": "2026-11-24T11:00:00Z", "end": "2026-11-26T00:00:00Z"},
        "run": {"start": "2026-11-27T00:00:00Z", "end": "2026-12-20T00:00:00Z"},
        "approval": "required"
    });
    let (status, a) = v1(&app, &pkey, Method::POST, "/v1/activities", activity).await;
    assert_eq!(status, StatusCode::CREATED, "{a}");
    let enroll = json!({
        "activity_id": a["id"], "title": "Cosy studio 20 off",
        "value": {"kind": "amount_off", "amount": 2000}, "cities": [1],
        "total_stock": 50, "validity": {"type": "relative", "days": 7}
    });
    let (status, t) = v1(&app, &mkey, Method::POST, "/v1/templates", enroll).await;
    assert_eq!(status, StatusCode::CREATED, "{t}");
    let id = t["id"].as_i64().unwrap();
    let template = format!("/console/templates/{id}");

    let platform = sign_in_cookie(&app, &pkey).await;
    let queue = page(&app, &platform, "/console/approvals").await;
    assert!(queue.contains("Cosy studio 20 off"), "{queue}");
    assert!(queue.contains(&format!("href=\"{template}\"")), "{queue}");
    let seen = page(&app, &platform, &template).await;
    assert!(seen.contains("id=\"approve\"") && seen.contains("id=\"reject\""));
    assert!(
        seen.contains("Waiting for the platform&#39;s approval"),
        "{seen}"
    );
    let merchant_cookie = sign_in_cookie(&app, &mkey).await;
    let theirs = page(&app, &merchant_cookie, &template).await;
    assert!(!theirs.contains("id=\"approve\"") && !theirs.contains("id=\"reject\""));

    // An empty reason is refused, in words, and nothing changes.
    let csrf = csrf_of(&seen);
    let reject = format!("{template}/reject");
    let form = format!("csrf={csrf}&reason=+");
    let a = answer(&app, form_post(&reject, Some(&platform), form)).await;
    assert!(a.status.is_client_error(), "{}", a.status);
    assert!(a.body.contains("reason"), "{}", a.body);
    let form = format!("csrf={csrf}&reason=Photos+missing");
    let a = answer(&app, form_post(&reject, Some(&platform), form)).await;
    assert_eq!(a.status, StatusCode::SEE_OTHER, "{}", a.body);
    let queue = page(&app, &platform, "/console/approvals").await;
    assert!(queue.contains("Nothing waits for approval"), "{queue}");
    let theirs = page(&app, &merchant_cookie, &template).await;
    assert!(theirs.contains("Photos missing"), "{theirs}");
    assert!(theirs.contains(">rejected<"), "{theirs}");
}
