//! The listings page offers every template the API would bind: the claimable ones and those
//! scheduled to become claimable (marked so), not drafts.

mod support;

use axum::http::{Method, StatusCode};
use coupond_api::AppSettings;
use coupond_store::Role;

use coupond_domain::OperatorRole;
use support::{
    answer, app_with_settings, csrf_of, form_post, key, merchant, page_get, published,
    sign_in_cookie, template_body, v1,
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

/// Binding from the console is the application's own operation, with its access and its
/// tenant rule: a platform operator whose role does not run campaigns is refused, as is a
/// merchant binding another merchant's template, and neither changes anything; the
/// merchant's own template is bound and shown.
#[tokio::test]
async fn the_console_binds_as_the_application_allows() {
    let app = app_with_settings(AppSettings::default()).await;
    let (m, other) = (merchant(&app).await, merchant(&app).await);
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let (okey, _) = key(&app, Role::Merchant, Some(other)).await;
    let body = |title| template_body(title, 10, "2026-12-31T00:00:00Z");
    let own = published(&app, &mkey, body("Own")).await;
    let theirs = published(&app, &okey, body("Theirs")).await;
    let listing =
        serde_json::json!({"city_id": 1, "category_id": 1, "title": "Loft", "price": 100000});
    let (_, l) = v1(&app, &mkey, Method::POST, "/v1/listings", listing).await;
    let lid = l["id"].as_i64().unwrap();
    let store = app.store.clone();
    let bound = || {
        let store = store.clone();
        async move {
            let id = coupond_domain::ListingId::new(lid).unwrap();
            store.listing_bindings(id).await.unwrap()
        }
    };
    let bind = |cookie: &str, page: &str, template: i64| {
        let form = format!("csrf={}&template_id={template}", csrf_of(page));
        form_post(&format!("/console/listings/{lid}/bind"), Some(cookie), form)
    };

    support::account(&app, "fin@example.com", OperatorRole::Finance, None).await;
    let fin = support::account_cookie(&app, "fin@example.com").await;
    let page = answer(&app, page_get("/console/listings", &fin)).await;
    let refused = answer(&app, bind(&fin, &page.body, own)).await;
    assert!(
        refused.body.contains("your role may not call this route"),
        "{}",
        refused.body
    );
    assert!(bound().await.is_empty(), "a refusal binds nothing");

    let cookie = sign_in_cookie(&app, &mkey).await;
    let page = answer(&app, page_get("/console/listings", &cookie)).await;
    let refused = answer(&app, bind(&cookie, &page.body, theirs)).await;
    assert!(
        refused
            .body
            .contains(&format!("Listing {lid}: no such resource")),
        "{}",
        refused.body
    );
    assert!(
        bound().await.is_empty(),
        "another merchant's template is not bound"
    );

    let done = answer(&app, bind(&cookie, &page.body, own)).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    assert_eq!(bound().await.len(), 1);
    // Claimable from 13:00: once it is, the listing shows it live, with the limit.
    app.clock.advance(time::Duration::hours(2));
    let cookie = sign_in_cookie(&app, &mkey).await;
    let page = answer(&app, page_get("/console/listings", &cookie)).await;
    assert!(page.body.contains("1 of 3"), "{}", page.body);
}
