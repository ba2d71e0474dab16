//! Cities by name: the platform's admins name them on the Cities page, and pages that showed
//! ids ("Cities 1, 2") show names with the id ("Lisbon (1)"); a city without a name is shown
//! as "city 2". A merchant neither sees the form nor may name a city.

mod support;

use axum::http::{Method, StatusCode};
use coupond_api::AppSettings;
use coupond_store::Role;
use serde_json::json;

use support::{
    answer, app_with_settings, csrf_of, form_post, key, merchant, page_get, sign_in_cookie, v1,
};

#[tokio::test]
async fn the_platform_names_cities_and_pages_show_the_names() {
    let app = app_with_settings(AppSettings::default()).await;
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
    // Signed in with its key, the merchant is named in the header too.
    assert!(
        page.body.contains(&format!("Harbour Homes ({m})")),
        "{}",
        page.body
    );
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
    let app = app_with_settings(AppSettings::default()).await;
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

/// Pages name what the API gives by id: a template's merchant ("Harbour Homes (1)") with the
/// template's own id (two templates may share a title), its activity by title, cities by
/// name; the approval queue names the merchant and the activity.
#[tokio::test]
async fn pages_name_merchants_activities_and_cities() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (pkey, _) = key(&app, Role::Platform, None).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let (status, _) = v1(
        &app,
        &pkey,
        Method::PUT,
        "/v1/cities/1",
        json!({"name": "Lisbon"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let activity = json!({
        "title": "Spring festival", "cities": [1], "kind": "amount_off",
        "value_min": 1000, "value_max": 5000,
        "enrollment": {"start": "2026-11-24T11:00:00Z", "end": "2026-11-26T00:00:00Z"},
        "run": {"start": "2026-11-27T00:00:00Z", "end": "2026-12-20T00:00:00Z"},
        "approval": "required"
    });
    let (status, a) = v1(&app, &pkey, Method::POST, "/v1/activities", activity).await;
    assert_eq!(status, StatusCode::CREATED, "{a}");
    let enroll = json!({
        "activity_id": a["id"], "title": "Studio 20 off",
        "value": {"kind": "amount_off", "amount": 2000}, "cities": [1],
        "total_stock": 50, "validity": {"type": "relative", "days": 7}
    });
    let (status, t) = v1(&app, &mkey, Method::POST, "/v1/templates", enroll).await;
    assert_eq!(status, StatusCode::CREATED, "{t}");
    let (id, activity_id) = (t["id"].as_i64().unwrap(), a["id"].as_i64().unwrap());
    let cookie = sign_in_cookie(&app, &pkey).await;
    let get = |path: String| {
        let app = &app;
        let cookie = cookie.clone();
        async move { answer(app, page_get(&path, &cookie)).await.body }
    };
    let list = get("/console/templates".into()).await;
    assert!(
        list.contains(&format!("#{id}</span>")) && list.contains(&format!("Harbour Homes ({m})")),
        "{list}"
    );
    let page = get(format!("/console/templates/{id}")).await;
    assert!(
        page.contains(&format!("Spring festival ({activity_id})")),
        "{page}"
    );
    assert!(page.contains("Lisbon (1)"), "{page}");
    let activity = get(format!("/console/activities/{activity_id}")).await;
    assert!(activity.contains("Lisbon (1)"), "{activity}");
    let queue = get("/console/approvals".into()).await;
    assert!(queue.contains(&format!("Harbour Homes ({m})")), "{queue}");
    assert!(
        queue.contains(&format!("Spring festival ({activity_id})")),
        "{queue}"
    );
}
