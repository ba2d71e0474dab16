//! Extending an order's lock from a locked coupon's page: the page names the order and its
//! deadline; the platform's support (and a platform key) gets a form that moves it later, a
//! merchant and the platform's marketing see the deadline without the form, and an earlier
//! deadline is refused in words with nothing changed.

mod support;

use axum::http::{Method, StatusCode};
use coupond_api::AppSettings;
use coupond_domain::OperatorRole;
use coupond_store::Role;
use serde_json::json;

use support::{
    account, account_cookie, answer, app_with_settings, csrf_of, form_post, key, merchant,
    page_get, published, sign_in_cookie, template_body, v1,
};

#[tokio::test]
async fn support_extends_a_locked_coupons_order() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let (service, _) = key(&app, Role::Service, None).await;
    let (platform, _) = key(&app, Role::Platform, None).await;
    let t = published(
        &app,
        &mkey,
        template_body("Lease deal", 10, "2026-12-31T00:00:00Z"),
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
    let order = json!({"user_id": "u-1", "city_id": 1, "lines": [
        {"product_id": "flat-1", "merchant_id": m.get(), "category_id": 1,
         "unit_price": 200000, "quantity": 1, "kind": "rent"}]});
    let (status, o) = v1(
        &app,
        &service,
        Method::POST,
        "/v1/orders/lease-9/lock",
        json!({"order": order, "coupon_ids": [id]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{o}");
    let coupon_page = format!("/console/coupons/{id}");

    // A merchant and the platform's marketing see the deadline, not the form.
    let cookie = sign_in_cookie(&app, &mkey).await;
    let page = answer(&app, page_get(&coupon_page, &cookie)).await;
    assert!(
        page.body
            .contains("order lease-9 until 2026-11-24 14:15 UTC"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("id=\"extend-form\""), "{}", page.body);
    account(&app, "mo@example.com", OperatorRole::Marketing, None).await;
    let cookie = account_cookie(&app, "mo@example.com").await;
    let page = answer(&app, page_get(&coupon_page, &cookie)).await;
    assert!(!page.body.contains("id=\"extend-form\""), "{}", page.body);

    // Support moves it three days later.
    account(&app, "sue@example.com", OperatorRole::Support, None).await;
    let cookie = account_cookie(&app, "sue@example.com").await;
    let page = answer(&app, page_get(&coupon_page, &cookie)).await;
    assert!(page.body.contains("id=\"extend-form\""), "{}", page.body);
    assert!(
        page.body
            .contains("name=\"hold_until\" value=\"2026-11-24T14:15\""),
        "{}",
        page.body
    );
    let csrf = csrf_of(&page.body);
    let extend = "/console/orders/lease-9/extend";
    let form = format!("csrf={csrf}&coupon={id}&hold_until=2026-11-27T18%3A00");
    let done = answer(&app, form_post(extend, Some(&cookie), form)).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    assert_eq!(done.location, coupon_page);
    let page = answer(&app, page_get(&coupon_page, &cookie)).await;
    assert!(
        page.body
            .contains("order lease-9 until 2026-11-27 18:00 UTC"),
        "{}",
        page.body
    );

    // Earlier is refused in words; the deadline stays. Without the form's token, nothing.
    let form = format!("csrf={csrf}&coupon={id}&hold_until=2026-11-25T09%3A00");
    let refused = answer(&app, form_post(extend, Some(&cookie), form)).await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.body);
    assert!(
        refused.body.contains("a deadline only moves later"),
        "{}",
        refused.body
    );
    let form = format!("csrf=forged&coupon={id}&hold_until=2026-11-28T09%3A00");
    let forged = answer(&app, form_post(extend, Some(&cookie), form)).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "{}", forged.body);
    let (_, o) = v1(&app, &service, Method::GET, "/v1/orders/lease-9", json!({})).await;
    assert_eq!(o["deadline"], "2026-11-27T18:00:00Z");

    // A platform key may do it too.
    let cookie = sign_in_cookie(&app, &platform).await;
    let page = answer(&app, page_get(&coupon_page, &cookie)).await;
    assert!(page.body.contains("id=\"extend-form\""), "{}", page.body);
}
