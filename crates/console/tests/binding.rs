//! The listings page offers every template the API would bind: the claimable ones and those
//! scheduled to become claimable (marked so), not drafts.

mod support;

use axum::http::{Method, StatusCode};
use coupond_api::AppSettings;
use coupond_store::Role;

use support::{
    answer, app_with_settings, key, merchant, page_get, published, sign_in_cookie, template_body,
    v1,
};

#[tokio::test]
async fn scheduled_templates_can_be_bound_too() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    // Claimable from 13:00; the clock reads 12:00: scheduled.
    let soon = published(
        &app,
        &mkey,
        template_body("Soon", 10, "2026-12-31T00:00:00Z"),
    )
    .await;
    let body = template_body("Still a draft", 10, "2026-12-31T00:00:00Z");
    let (status, _) = v1(&app, &mkey, Method::POST, "/v1/templates", body).await;
    assert_eq!(status, StatusCode::CREATED);
    let listing =
        serde_json::json!({"city_id": 1, "category_id": 1, "title": "Loft", "price": 100000});
    let (status, l) = v1(&app, &mkey, Method::POST, "/v1/listings", listing).await;
    assert_eq!(status, StatusCode::CREATED, "{l}");
    let cookie = sign_in_cookie(&app, &mkey).await;
    let page = answer(&app, page_get("/console/listings", &cookie)).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(
        page.body.contains(&format!(
            "<option value=\"{soon}\">Soon (scheduled)</option>"
        )),
        "{}",
        page.body
    );
    assert!(!page.body.contains("Still a draft"), "{}", page.body);
    app.clock.advance(time::Duration::hours(2));
    let cookie = sign_in_cookie(&app, &mkey).await;
    let page = answer(&app, page_get("/console/listings", &cookie)).await;
    assert!(
        page.body
            .contains(&format!("<option value=\"{soon}\">Soon</option>")),
        "{}",
        page.body
    );
}
