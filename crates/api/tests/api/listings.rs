//! Listings, bindings and search by coupon.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::*;

fn listing(city: i64, category: i64, external: &str) -> Value {
    json!({"external_id": external, "city_id": city, "category_id": category,
           "title": "Two rooms by the lake", "price": 450000, "deposit": 900000})
}

/// A published standalone template of merchant 1, claimable hours [c0, c1).
async fn live_template(app: &TestApp, c0: i64, c1: i64) -> i64 {
    let r = app
        .post("/v1/templates", app.m1(), standalone_template(c0, c1))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.body["id"].as_i64().unwrap();
    let r = app
        .post(&format!("/v1/templates/{id}/publish"), app.m1(), json!({}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    id
}

#[tokio::test]
async fn merchants_manage_listings_and_users_find_them_by_coupon() {
    let app = TestApp::new().await;
    let r = app
        .post("/v1/listings", app.m1(), listing(1, 4, "h-1"))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["coupons"], json!([]));
    let l1 = r.body["id"].as_i64().unwrap();
    let r = app
        .post("/v1/listings", app.m1(), listing(1, 4, "h-1"))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "external_id_taken")
    );
    // A catalogue sync finds its listing again by external id; m2 has none of m1's.
    let r = app.get("/v1/listings?external_id=h-1", app.m1()).await;
    assert_eq!(r.body["items"][0]["id"], l1, "{}", r.body);
    let r = app.get("/v1/listings?external_id=h-1", app.m2()).await;
    assert_eq!(r.body["items"], json!([]));
    let long = "x".repeat(101);
    for bad in ["", long.as_str()] {
        let r = app
            .get(&format!("/v1/listings?external_id={bad}"), app.m1())
            .await;
        assert_eq!(
            (r.status, r.body["field"].as_str()),
            (StatusCode::BAD_REQUEST, Some("external_id"))
        );
    }
    let l2 = app
        .post("/v1/listings", app.m1(), listing(2, 5, "h-2"))
        .await
        .body["id"]
        .as_i64()
        .unwrap();
    let r = app
        .patch(
            &format!("/v1/listings/{l2}"),
            app.m1(),
            json!({"price": 300000, "external_id": null}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["price"].as_i64()),
        (StatusCode::OK, Some(300000)),
        "{}",
        r.body
    );
    assert!(r.body.get("external_id").is_none());

    let t = live_template(&app, 10, 20).await;
    let r = app
        .call(
            Method::PUT,
            &format!("/v1/listings/{l1}/templates/{t}"),
            Some(app.m1()),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["bound"], json!([t]));
    let r = app
        .call(
            Method::PUT,
            &format!("/v1/listings/{l1}/templates/{t}"),
            Some(app.m1()),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "binding again is a no-op");

    // Before the claim window the coupon is not live; inside it, users see it; after, not.
    let search = |q: &str| format!("/v1/listings?{q}");
    assert_eq!(
        app.get(&search("has_coupon=true"), &app.user).await.body["items"],
        json!([])
    );
    app.clock
        .set(coupond_domain::Timestamp::parse(&at(10)).unwrap());
    let r = app.get(&search("has_coupon=true"), &app.user).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let items = r.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["id"], l1);
    let coupon = &items[0]["coupons"][0];
    assert_eq!(
        (coupon["template_id"].as_i64(), coupon["remaining"].as_i64()),
        (Some(t), Some(10))
    );
    assert_eq!(coupon["sold_out"], false);
    assert_eq!(coupon["value"]["kind"], "percent_off");
    let r = app
        .get(&search("kind=percent_off&city=1&category=4"), &app.service)
        .await;
    assert_eq!(r.body["items"].as_array().unwrap().len(), 1);
    let r = app
        .get(&search(&format!("template_id={t}")), &app.platform)
        .await;
    assert_eq!(r.body["items"].as_array().unwrap().len(), 1);
    let r = app.get(&search("kind=free_days"), &app.user).await;
    assert_eq!(r.body["items"], json!([]));
    let r = app.get(&search("has_coupon=false"), &app.user).await;
    assert_eq!(r.body["items"][0]["id"], l2);
    let r = app.get(&format!("/v1/listings/{l1}"), &app.user).await;
    assert_eq!(r.body["coupons"].as_array().unwrap().len(), 1);
    app.clock
        .set(coupond_domain::Timestamp::parse(&at(20)).unwrap());
    assert_eq!(
        app.get(&search("has_coupon=true"), &app.user).await.body["items"],
        json!([])
    );

    // Unbinding is idempotent.
    let path = format!("/v1/listings/{l1}/templates/{t}");
    assert_eq!(
        app.call(Method::DELETE, &path, Some(app.m1()), None)
            .await
            .status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        app.call(Method::DELETE, &path, Some(app.m1()), None)
            .await
            .status,
        StatusCode::NO_CONTENT
    );
    let r = app.get(&search("limit=1"), &app.user).await;
    assert_eq!(r.body["items"].as_array().unwrap().len(), 1);
    assert!(r.body["next_cursor"].is_string());
    let r = app.get(&search("bogus=1"), &app.user).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::BAD_REQUEST, "invalid_query")
    );
}

#[tokio::test]
async fn merchants_cannot_touch_each_others_listings_or_bind_foreign_templates() {
    let app = TestApp::new().await;
    let l1 = app
        .post("/v1/listings", app.m1(), listing(1, 4, "a"))
        .await
        .body["id"]
        .as_i64()
        .unwrap();
    let l2 = app
        .post("/v1/listings", app.m2(), listing(3, 4, "a"))
        .await
        .body["id"]
        .as_i64()
        .unwrap();
    let t1 = live_template(&app, 10, 20).await;
    assert_eq!(
        app.get(&format!("/v1/listings/{l1}"), app.m2())
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    let r = app
        .patch(
            &format!("/v1/listings/{l1}"),
            app.m2(),
            json!({"title": "mine"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    // Merchant 2 binding merchant 1's template to its own listing, or to merchant 1's listing.
    for path in [
        format!("/v1/listings/{l2}/templates/{t1}"),
        format!("/v1/listings/{l1}/templates/{t1}"),
    ] {
        let r = app.call(Method::PUT, &path, Some(app.m2()), None).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}");
        let r = app.call(Method::DELETE, &path, Some(app.m2()), None).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{path}");
    }
    let mine = app.get("/v1/listings", app.m2()).await;
    assert_eq!(
        mine.body["items"].as_array().unwrap().len(),
        1,
        "merchants list their own"
    );
    let r = app
        .post(
            "/v1/listings",
            app.m1(),
            json!({"city_id": 1, "category_id": 1, "title": "x", "price": 1, "merchant_id": 2}),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "unknown_field")
    );
    // Aborted templates cannot be bound.
    let r = app
        .post(&format!("/v1/templates/{t1}/abort"), app.m1(), json!({}))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let r = app
        .call(
            Method::PUT,
            &format!("/v1/listings/{l1}/templates/{t1}"),
            Some(app.m1()),
            None,
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "template_not_bindable")
    );
}

/// Twenty concurrent binds of different templates to one listing leave exactly three.
#[tokio::test]
async fn concurrent_binds_respect_the_limit() {
    let app = TestApp::new().await;
    let l = app
        .post("/v1/listings", app.m1(), listing(1, 4, "a"))
        .await
        .body["id"]
        .as_i64()
        .unwrap();
    let mut templates = vec![];
    for _ in 0..20 {
        templates.push(live_template(&app, 10, 20).await);
    }
    let app = std::sync::Arc::new(app);
    let mut joins = vec![];
    for t in templates {
        let app = app.clone();
        joins.push(tokio::spawn(async move {
            let path = format!("/v1/listings/{l}/templates/{t}");
            let r = app.call(Method::PUT, &path, Some(app.m1()), None).await;
            (r.status, r.code().to_owned())
        }));
    }
    let mut outcomes = std::collections::BTreeMap::new();
    for j in joins {
        *outcomes.entry(j.await.unwrap()).or_insert(0) += 1;
    }
    let created = outcomes
        .get(&(StatusCode::CREATED, String::new()))
        .copied()
        .unwrap_or(0);
    let limited = outcomes
        .get(&(StatusCode::CONFLICT, "binding_limit".to_owned()))
        .copied()
        .unwrap_or(0);
    assert_eq!((created, limited), (3, 17), "{outcomes:?}");
    app.clock
        .set(coupond_domain::Timestamp::parse(&at(10)).unwrap());
    let r = app.get(&format!("/v1/listings/{l}"), &app.user).await;
    assert_eq!(r.body["coupons"].as_array().unwrap().len(), 3);
}

/// The platform binds its own templates to any merchant's listing, so platform-funded coupons
/// show where users browse, within the listing's limit; it may not bind a merchant's template,
/// nor a merchant the platform's, and unbinding follows the same rule.
#[tokio::test]
async fn the_platform_binds_its_own_templates_to_any_listing() {
    let app = TestApp::new().await;
    let r = app
        .post("/v1/listings", app.m1(), listing(1, 4, "h-9"))
        .await;
    let listing_id = r.body["id"].as_i64().unwrap();
    let r = app
        .post("/v1/templates", &app.platform, standalone_template(0, 48))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let platform_t = r.body["id"].as_i64().unwrap();
    let r = app
        .post(
            &format!("/v1/templates/{platform_t}/publish"),
            &app.platform,
            json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let merchant_t = live_template(&app, 0, 48).await;
    let path = |t: i64| format!("/v1/listings/{listing_id}/templates/{t}");

    // A merchant may not bind the platform's template, nor the platform a merchant's.
    let r = app
        .call(Method::PUT, &path(platform_t), Some(app.m1()), None)
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    let r = app
        .call(Method::PUT, &path(merchant_t), Some(&app.platform), None)
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);

    let r = app
        .call(Method::PUT, &path(platform_t), Some(&app.platform), None)
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let r = app
        .call(Method::PUT, &path(merchant_t), Some(app.m1()), None)
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["bound"], json!([platform_t, merchant_t]));

    // Users see the platform's coupon on the merchant's listing.
    let r = app
        .get(&format!("/v1/listings/{listing_id}"), &app.user)
        .await;
    let shown: Vec<i64> = r.body["coupons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["template_id"].as_i64().unwrap())
        .collect();
    assert!(shown.contains(&platform_t), "{}", r.body);

    // Unbinding: the merchant may not unbind the platform's template; the platform may.
    let r = app
        .call(Method::DELETE, &path(platform_t), Some(app.m1()), None)
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    let r = app
        .call(Method::DELETE, &path(platform_t), Some(&app.platform), None)
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    let r = app
        .get(&format!("/v1/listings/{listing_id}"), &app.user)
        .await;
    assert_eq!(r.body["coupons"].as_array().unwrap().len(), 1, "{}", r.body);
}
