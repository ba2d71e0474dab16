//! Cities by name: the platform's admins name them on the Cities page, and pages that showed
//! ids ("Cities 1, 2") show names with the id ("Lisbon (1)"); a city without a name is shown
//! as "city 2". A merchant neither sees the form nor may name a city.

mod support;

use axum::http::StatusCode;
use coupond_api::ApiSettings;
use coupond_store::Role;

use support::{
    answer, app_with_settings, csrf_of, form_post, key, merchant, page_get, sign_in_cookie,
};

#[tokio::test]
async fn the_platform_names_cities_and_pages_show_the_names() {
    let app = app_with_settings(ApiSettings::default()).await;
    let m = merchant(&app).await;
    let (platform, _) = key(&app, Role::Platform, None).await;
    let cookie = sign_in_cookie(&app, &platform).await;
    let page = answer(&app, page_get("/console/cities", &cookie)).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(
        page.body.contains("No city has a name yet"),
        "{}",
        page.body
    );
    let csrf = csrf_of(&page.body);
    let form = |id: &str, name: &str| format!("csrf={csrf}&id={id}&name={name}");

    let bad = answer(
        &app,
        form_post("/console/cities", Some(&cookie), form("x", "Lisbon")),
    )
    .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        bad.body.contains("a city id is a whole number"),
        "{}",
        bad.body
    );
    let empty = answer(
        &app,
        form_post("/console/cities", Some(&cookie), form("1", "")),
    )
    .await;
    assert_eq!(empty.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(empty.body.contains("aria-invalid"), "{}", empty.body);

    let named = answer(
        &app,
        form_post("/console/cities", Some(&cookie), form("1", "Lisbon")),
    )
    .await;
    assert_eq!(named.status, StatusCode::SEE_OTHER, "{}", named.body);
    let page = answer(&app, page_get("/console/cities", &cookie)).await;
    assert!(page.body.contains("<td>Lisbon</td>"), "{}", page.body);

    let merchants = answer(&app, page_get("/console/merchants", &cookie)).await;
    assert!(merchants.body.contains("Lisbon (1)"), "{}", merchants.body);
    assert!(
        merchants.body.contains("1 Lisbon"),
        "the form's hint lists it: {}",
        merchants.body
    );
    let one = answer(&app, page_get(&format!("/console/merchants/{m}"), &cookie)).await;
    assert!(one.body.contains("Cities: Lisbon (1)"), "{}", one.body);

    // A merchant sees the names, not the form, and may not name a city.
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let mcookie = sign_in_cookie(&app, &mkey).await;
    let page = answer(&app, page_get("/console/cities", &mcookie)).await;
    assert!(page.body.contains("<td>Lisbon</td>"), "{}", page.body);
    assert!(!page.body.contains("id=\"city-form\""), "{}", page.body);
    let csrf = csrf_of(&page.body);
    let refused = answer(
        &app,
        form_post(
            "/console/cities",
            Some(&mcookie),
            format!("csrf={csrf}&id=2&name=Porto"),
        ),
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
}

/// A form with several invalid fields shows each next to its field at once, not the first
/// alone (the API names them all in `errors`).
#[tokio::test]
async fn every_invalid_field_of_a_form_is_shown_at_once() {
    let app = app_with_settings(ApiSettings::default()).await;
    let (platform, _) = key(&app, Role::Platform, None).await;
    let cookie = sign_in_cookie(&app, &platform).await;
    let page = answer(&app, page_get("/console/merchants", &cookie)).await;
    let csrf = csrf_of(&page.body);
    let form = format!("csrf={csrf}&name=&short_name=&cities=1");
    let refused = answer(&app, form_post("/console/merchants", Some(&cookie), form)).await;
    assert_eq!(
        refused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        refused.body
    );
    assert_eq!(
        refused.body.matches("aria-invalid=\"true\"").count(),
        2,
        "{}",
        refused.body
    );
    assert!(
        refused.body.contains("must be 1 to 200 characters"),
        "{}",
        refused.body
    );
    assert!(
        refused.body.contains("must be 1 to 50 characters"),
        "{}",
        refused.body
    );
}
