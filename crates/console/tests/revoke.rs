//! Support's user lookup (with when the user was last seen). Revoking a coupon from the console: the form asks first and needs a
//! reason; an empty one is refused in words naming the reason (the API's rule, no stand-in
//! text) and the coupon stays as it was; with one, the coupon is revoked and its history keeps
//! the reason. The platform sees a preview of what the user may claim now; a merchant does not.

mod support;

use axum::http::{Method, StatusCode};
use coupond_api::AppSettings;
use coupond_store::Role;
use serde_json::json;

use support::{
    answer, app_with_settings, csrf_of, form_post, key, merchant, page_get, published,
    sign_in_cookie, template_body, v1,
};

#[tokio::test]
async fn a_revoke_needs_a_reason() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let (service, _) = key(&app, Role::Service, None).await;
    let t = published(
        &app,
        &mkey,
        template_body("Spring", 10, "2026-12-31T00:00:00Z"),
    )
    .await;
    app.clock.advance(time::Duration::hours(2));
    let claim = format!("/v1/templates/{t}/claims");
    let (status, c) = v1(
        &app,
        &service,
        Method::POST,
        &claim,
        json!({"user_id": "u-1"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{c}");
    let id = c["id"].as_i64().unwrap();

    let cookie = sign_in_cookie(&app, &mkey).await;
    let page = answer(&app, page_get(&format!("/console/coupons/{id}"), &cookie)).await;
    assert!(
        page.body.contains("data-confirm=\"Revoke this coupon?"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("name=\"reason\" required"),
        "{}",
        page.body
    );
    let csrf = csrf_of(&page.body);
    let revoke = format!("/console/coupons/{id}/revoke");
    let refused = answer(
        &app,
        form_post(&revoke, Some(&cookie), format!("csrf={csrf}&reason=+")),
    )
    .await;
    assert_eq!(
        refused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        refused.body
    );
    assert!(refused.body.contains("reason:"), "{}", refused.body);
    let page = answer(&app, page_get(&format!("/console/coupons/{id}"), &cookie)).await;
    assert!(page.body.contains(">unused<"), "{}", page.body);

    let form = format!("csrf={csrf}&reason=asked+by+the+user");
    let done = answer(&app, form_post(&revoke, Some(&cookie), form)).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    let page = answer(&app, page_get(&format!("/console/coupons/{id}"), &cookie)).await;
    assert!(page.body.contains("asked by the user"), "{}", page.body);
    assert!(
        !page.body.contains("id=\"revoke\""),
        "a revoked coupon offers no revoke"
    );
}

#[tokio::test]
async fn the_platform_sees_what_a_user_may_claim() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let (platform, _) = key(&app, Role::Platform, None).await;
    let (service, _) = key(&app, Role::Service, None).await;
    let spring = published(
        &app,
        &mkey,
        template_body("Spring", 10, "2026-12-31T00:00:00Z"),
    )
    .await;
    let mut others = template_body("Only for u-2", 10, "2026-12-31T00:00:00Z");
    others["audience"] = json!({"type": "users", "ids": ["u-2"]});
    let others = published(&app, &mkey, others).await;
    app.clock.advance(time::Duration::hours(2));
    let claim = format!("/v1/templates/{spring}/claims");
    let (status, c) = v1(
        &app,
        &service,
        Method::POST,
        &claim,
        json!({"user_id": "u-1"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{c}");

    let (status, seen) = v1(
        &app,
        &service,
        Method::POST,
        "/v1/users/u-1/seen",
        json!({}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{seen}");

    let cookie = sign_in_cookie(&app, &platform).await;
    let page = answer(&app, page_get("/console/users?user=u-1", &cookie)).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("Claimable now"), "{}", page.body);
    let shown = format!(
        "id=\"last-seen\">last seen {}",
        seen["last_seen_at"].as_str().unwrap()[..16].replace('T', " ")
    );
    assert!(page.body.contains(&shown), "{shown}: {}", page.body);
    let row = page
        .body
        .split(&format!("id=\"offer-{spring}\""))
        .nth(1)
        .and_then(|rest| rest.split("</tr>").next())
        .unwrap_or_else(|| panic!("no row for Spring: {}", page.body));
    for shown in [
        "Spring",
        "9 left",
        "holds 1 of 1",
        "cannot claim",
        "2026-11-30 00:00 UTC",
    ] {
        assert!(row.contains(shown), "{shown}: {row}");
    }
    assert!(
        !page.body.contains(&format!("offer-{others}")),
        "{}",
        page.body
    );
    let page = answer(&app, page_get("/console/users?user=u-2", &cookie)).await;
    assert!(
        page.body.contains(&format!("offer-{others}")),
        "{}",
        page.body
    );
    assert!(page.body.contains("last seen never"), "{}", page.body);

    let cookie = sign_in_cookie(&app, &mkey).await;
    let page = answer(&app, page_get("/console/users?user=u-1", &cookie)).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(!page.body.contains("Claimable now"), "{}", page.body);
}
