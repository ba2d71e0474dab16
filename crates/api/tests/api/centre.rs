//! The coupon centre over HTTP, on every backend: what a user may claim now (filtered by city,
//! listing, activity and kind, page by page), where it stands with each template (held, stock
//! left, can claim), audiences by user list and by tag, the public views of a template and of
//! a running activity, and that nothing of an owner's business reaches a user.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::on_every_backend;
use crate::support::*;

/// Creates `body` as `credential` and publishes it; its id.
pub(crate) async fn published(app: &TestApp, credential: &str, body: Value) -> i64 {
    let r = app.post("/v1/templates", credential, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.body["id"].as_i64().unwrap();
    let r = app
        .post(
            &format!("/v1/templates/{id}/publish"),
            credential,
            json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    id
}

/// A standalone amount_off template claimable hours [c0, c1) in `city`, `stock` coupons.
fn amount_off(city: i64, c0: i64, c1: i64, stock: i64) -> Value {
    json!({
        "title": format!("20 off in city {city}"),
        "description": "On any stay",
        "value": {"kind": "amount_off", "amount": 2000},
        "cities": [city],
        "total_stock": stock,
        "per_user_limit": 1,
        "claim_window": {"start": at(c0), "end": at(c1)},
        "validity": {"type": "relative", "days": 7},
        "budget": 100000,
        "metadata": {"campaign": "internal-code-7"}
    })
}

/// The template ids of a centre page.
fn ids(r: &Reply) -> Vec<i64> {
    r.body["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", r.body))
        .iter()
        .map(|i| i["template_id"].as_i64().unwrap())
        .collect()
}

/// The item for template `id` of a centre page.
fn item(r: &Reply, id: i64) -> Value {
    r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["template_id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("template {id} is not in {}", r.body))
}

/// What a user is shown of a template: these keys and no other (no budget, stats, audience,
/// metadata or review).
const OFFER_KEYS: [&str; 19] = [
    "activity",
    "can_claim",
    "cities",
    "claim_window",
    "deduction",
    "description",
    "held",
    "merchant_id",
    "per_user_limit",
    "remaining",
    "scope",
    "sold_out",
    "stacking",
    "status",
    "template_id",
    "threshold",
    "title",
    "validity",
    "value",
];

fn assert_public(offer: &Value) {
    for key in offer.as_object().unwrap().keys() {
        assert!(
            OFFER_KEYS.contains(&key.as_str()),
            "a user is shown {key}: {offer}"
        );
    }
}

async fn lists_what_the_user_may_claim(app: TestApp) {
    let percent = published(&app, app.m1(), standalone_template(0, 100)).await;
    let city2 = published(&app, app.m1(), amount_off(2, 0, 100, 5)).await;
    let later = published(&app, app.m1(), amount_off(1, 10, 100, 5)).await;
    let draft = app
        .post("/v1/templates", app.m1(), amount_off(1, 0, 100, 5))
        .await;
    assert_eq!(draft.status, StatusCode::CREATED, "{}", draft.body);
    let other = published(&app, app.m2(), amount_off(3, 0, 100, 5)).await;

    let all = app.get("/v1/me/claimable", &app.user).await;
    assert_eq!(all.status, StatusCode::OK, "{}", all.body);
    assert_eq!(
        ids(&all),
        [percent, city2, other],
        "not the draft, not {later} yet"
    );
    let one = item(&all, percent);
    assert_public(&one);
    assert_eq!(
        (&one["title"], &one["threshold"], &one["per_user_limit"]),
        (&json!("10% off, at most 50"), &json!(10000), &json!(2))
    );
    assert_eq!(
        (
            &one["held"],
            &one["remaining"],
            &one["sold_out"],
            &one["can_claim"]
        ),
        (&json!(0), &json!(10), &json!(false), &json!(true))
    );
    assert_eq!(one["claim_window"]["end"], json!(at(100)));
    assert_eq!(one["status"], "active");
    let budgeted = item(&all, city2);
    assert_public(&budgeted);
    assert_eq!(budgeted["description"], "On any stay");

    let r = app.get("/v1/me/claimable?city_id=1", &app.user).await;
    assert_eq!(ids(&r), [percent]);
    let r = app.get("/v1/me/claimable?kind=amount_off", &app.user).await;
    assert_eq!(ids(&r), [city2, other]);
    let r = app
        .get("/v1/me/claimable?city_id=2&kind=percent_off", &app.user)
        .await;
    assert_eq!(ids(&r), Vec::<i64>::new());

    // Page by page, by template id.
    let first = app.get("/v1/me/claimable?limit=2", &app.user).await;
    assert_eq!(ids(&first), [percent, city2]);
    let cursor = first.body["next_cursor"].as_str().unwrap();
    let rest = app
        .get(
            &format!("/v1/me/claimable?limit=2&cursor={cursor}"),
            &app.user,
        )
        .await;
    assert_eq!(
        (ids(&rest), rest.body.get("next_cursor")),
        (vec![other], None)
    );

    // Claiming moves the user's standing; the window opening brings the later one in.
    let claim = format!("/v1/templates/{percent}/claims");
    for _ in 0..2 {
        let r = app.post(&claim, &app.user, json!({})).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    }
    app.clock.advance(time::Duration::hours(10));
    let r = app.get("/v1/me/claimable?city_id=1", &app.user).await;
    assert_eq!(ids(&r), [percent, later]);
    let mine = item(&r, percent);
    assert_eq!(
        (&mine["held"], &mine["remaining"], &mine["can_claim"]),
        (&json!(2), &json!(8), &json!(false)),
        "at the per-user limit"
    );
    // Another user's standing is its own.
    let r = app
        .get("/v1/users/u-2/claimable?city_id=1", &app.service)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let theirs = item(&r, percent);
    assert_eq!(
        (&theirs["held"], &theirs["can_claim"]),
        (&json!(0), &json!(true))
    );
}

async fn sold_out_ended_and_aborted(app: TestApp) {
    let scarce = published(&app, app.m1(), amount_off(1, 0, 10, 1)).await;
    let stopped = published(&app, app.m1(), amount_off(1, 0, 10, 5)).await;
    let r = app
        .post(
            &format!("/v1/templates/{scarce}/claims"),
            &app.service,
            json!({"user_id": "u-9"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let r = app.get("/v1/me/claimable", &app.user).await;
    let gone = item(&r, scarce);
    assert_eq!(
        (&gone["remaining"], &gone["sold_out"], &gone["can_claim"]),
        (&json!(0), &json!(true), &json!(false))
    );
    let r = app
        .post(
            &format!("/v1/templates/{stopped}/abort"),
            app.m1(),
            json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(ids(&app.get("/v1/me/claimable", &app.user).await), [scarce]);
    app.clock.advance(time::Duration::hours(10));
    assert_eq!(
        ids(&app.get("/v1/me/claimable", &app.user).await),
        Vec::<i64>::new(),
        "claiming is over"
    );
}

async fn audiences_show_only_to_their_users(app: TestApp) {
    let mut listed = amount_off(1, 0, 100, 5);
    listed["audience"] = json!({"type": "users", "ids": ["u-2", "u-3"]});
    let listed = published(&app, app.m1(), listed).await;
    // Tag audiences on the platform's own template (merchants name shared tags only).
    let mut tagged = amount_off(1, 0, 100, 5);
    tagged["audience"] = json!({"type": "tags", "any": ["vip", "student"]});
    let tagged = published(&app, &app.platform, tagged).await;
    let everyone = published(&app, app.m1(), amount_off(1, 0, 100, 5)).await;

    let r = app.get("/v1/me/claimable", &app.user).await;
    assert_eq!(ids(&r), [everyone]);
    for hidden in [listed, tagged] {
        let r = app
            .get(&format!("/v1/me/templates/{hidden}"), &app.user)
            .await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
        // A claim answers alike (issue 61 point 10): the template is not there for this user.
        let r = app
            .post(
                &format!("/v1/templates/{hidden}/claims"),
                &app.user,
                json!({}),
            )
            .await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::NOT_FOUND, "not_found"),
            "{}",
            r.body
        );
    }
    let r = app.get("/v1/users/u-2/claimable", &app.service).await;
    assert_eq!(ids(&r), [listed, everyone]);
    assert_public(&item(&r, listed));

    put_tags(&app, "u-1", json!(["new"])).await;
    assert_eq!(
        ids(&app.get("/v1/me/claimable", &app.user).await),
        [everyone]
    );
    put_tags(&app, "u-1", json!(["student"])).await;
    let r = app.get("/v1/me/claimable", &app.user).await;
    assert_eq!(ids(&r), [tagged, everyone]);
    assert_eq!(
        item(&r, tagged).get("merchant_id"),
        None,
        "the platform's own"
    );
    let r = app
        .get(&format!("/v1/me/templates/{tagged}"), &app.user)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    // What the centre offers, a claim takes.
    let r = app
        .post(
            &format!("/v1/templates/{tagged}/claims"),
            &app.user,
            json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
}

/// Sets `user`'s tags, as the order service.
async fn put_tags(app: &TestApp, user: &str, tags: Value) {
    let path = format!("/v1/users/{user}/tags");
    let body = Some(json!({ "tags": tags }));
    let r = app.call(Method::PUT, &path, Some(&app.service), body).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

on_every_backend!(
    lists_what_the_user_may_claim,
    sold_out_ended_and_aborted,
    audiences_show_only_to_their_users
);
