//! The coupon centre's public views and filters, on every backend: a published template as a
//! user sees it (drafts and enrollments waiting for approval read as absent), a running
//! activity (and no other), the activity and listing filters, refused queries; and, with the
//! cache on, that the centre follows publishing, aborting, the clock and the claim path's
//! sold-out memory at once.

use std::time::Duration as StdDuration;

use axum::http::StatusCode;
use coupond_api::AppSettings;
use serde_json::json;

use crate::centre::published;
use crate::on_every_backend;
use crate::support::*;

fn ids(r: &Reply) -> Vec<i64> {
    r.body["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", r.body))
        .iter()
        .map(|i| i["template_id"].as_i64().unwrap())
        .collect()
}

async fn public_views_of_templates_and_activities(app: TestApp) {
    let activity = app.activity(activity_body(-1, 24, 48, 96)).await;
    let r = app
        .post("/v1/templates", app.m1(), activity_template(activity, 1000))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let enrolled = r.body["id"].as_i64().unwrap();
    let draft = app
        .post("/v1/templates", app.m1(), standalone_template(0, 100))
        .await
        .body["id"]
        .as_i64()
        .unwrap();
    let mut approving = activity_body(-1, 24, 48, 96);
    approving["approval"] = json!("required");
    let approving = app.activity(approving).await;
    let pending = app
        .post(
            "/v1/templates",
            app.m1(),
            activity_template(approving, 1000),
        )
        .await
        .body["id"]
        .as_i64()
        .unwrap();
    for absent in [draft, pending, 999_999] {
        let r = app
            .get(&format!("/v1/me/templates/{absent}"), &app.user)
            .await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::NOT_FOUND, "not_found"),
            "{absent}"
        );
    }
    let me_activity = format!("/v1/me/activities/{activity}");
    let r = app.get(&me_activity, &app.user).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "enrolling: {}", r.body);

    // Before its run the campaign is not announced: its template reads as absent (issue 61
    // point 10), as a draft does.
    let r = app
        .get(&format!("/v1/me/templates/{enrolled}"), &app.user)
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::NOT_FOUND, "not_found"),
        "unannounced: {}",
        r.body
    );

    app.clock.advance(time::Duration::hours(48));
    // While it runs: on offer, readable, with nothing of the owner's business.
    let r = app
        .get(&format!("/v1/me/templates/{enrolled}"), &app.user)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        (&r.body["status"], &r.body["can_claim"], &r.body["held"]),
        (&json!("active"), &json!(true), &json!(0))
    );
    assert_eq!(
        r.body["activity"],
        json!({"id": activity, "title": "Spring festival"})
    );
    for private in [
        "budget", "claimed", "used", "given", "audience", "metadata", "review",
    ] {
        assert!(r.body.get(private).is_none(), "{private}: {}", r.body);
    }
    let r = app.get(&me_activity, &app.user).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let mut keys: Vec<&str> = r
        .body
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "cities",
            "description",
            "id",
            "kind",
            "run",
            "status",
            "title"
        ],
        "no funding, bounds or enrollment: {}",
        r.body
    );
    assert_eq!(
        (&r.body["status"], &r.body["kind"], &r.body["run"]["end"]),
        (&json!("running"), &json!("amount_off"), &json!(at(96)))
    );
    let r = app
        .get(
            &format!("/v1/me/claimable?activity_id={activity}"),
            &app.user,
        )
        .await;
    assert_eq!(ids(&r), [enrolled]);
    assert_eq!(r.body["items"][0]["activity"]["title"], "Spring festival");
    assert_eq!(r.body["items"][0]["can_claim"], true);
    let r = app
        .get(
            &format!("/v1/me/claimable?activity_id={approving}"),
            &app.user,
        )
        .await;
    assert_eq!(ids(&r), Vec::<i64>::new(), "pending approval");

    // The listing filter: the templates bound to it.
    let listing = app
        .post(
            "/v1/listings",
            app.m1(),
            json!({"city_id": 1, "category_id": 1, "title": "Loft", "price": 100000}),
        )
        .await
        .body["id"]
        .as_i64()
        .unwrap();
    let standalone = published(&app, app.m1(), standalone_template(48, 100)).await;
    let bind = format!("/v1/listings/{listing}/templates/{standalone}");
    let r = app
        .call(axum::http::Method::PUT, &bind, Some(app.m1()), None)
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let r = app
        .get(&format!("/v1/me/claimable?listing_id={listing}"), &app.user)
        .await;
    assert_eq!(ids(&r), [standalone]);
    let r = app
        .get("/v1/me/claimable?listing_id=999999", &app.user)
        .await;
    assert_eq!(ids(&r), Vec::<i64>::new());
    assert_eq!(
        ids(&app.get("/v1/me/claimable", &app.user).await),
        [enrolled, standalone]
    );
    let r = app
        .post(
            &format!("/v1/templates/{enrolled}/claims"),
            &app.user,
            json!({}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);

    // Once it ended: still readable by a holder of its coupons, absent to anyone else.
    app.clock.advance(time::Duration::hours(48));
    let r = app.get(&me_activity, &app.user).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "ended: {}", r.body);
    let r = app
        .get(&format!("/v1/me/templates/{enrolled}"), &app.user)
        .await;
    assert_eq!(
        (&r.body["status"], &r.body["held"]),
        (&json!("ended"), &json!(1)),
        "{}",
        r.body
    );
    app.clock.advance(time::Duration::hours(8));
    let r = app
        .get(&format!("/v1/me/templates/{standalone}"), &app.user)
        .await;
    assert_eq!(
        r.status,
        StatusCode::NOT_FOUND,
        "ended, never held: {}",
        r.body
    );
}

async fn refused_queries_name_the_field(app: TestApp) {
    for (query, field) in [
        ("city_id=0", "city_id"),
        ("listing_id=x", "listing_id"),
        ("kind=nope", "kind"),
        ("cursor=bogus", "cursor"),
        ("limit=0", "limit"),
        ("colour=red", "colour"),
    ] {
        let r = app
            .get(&format!("/v1/me/claimable?{query}"), &app.user)
            .await;
        assert_eq!(
            (r.status, r.body["field"].as_str()),
            (StatusCode::BAD_REQUEST, Some(field)),
            "{query}: {}",
            r.body
        );
    }
    let r = app.get("/v1/users/u-1/claimable", &app.user).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
}

on_every_backend!(
    public_views_of_templates_and_activities,
    refused_queries_name_the_field
);

/// With the cache on, the shelf is read once per `cache_ttl`, yet publishing and aborting show
/// at once, the clock closes a window at once, the user's own standing is never cached, and a
/// claim answered `sold_out` shows as sold out at once.
#[tokio::test]
async fn the_cached_shelf_follows_changes_at_once() {
    let settings = AppSettings {
        cache_ttl: StdDuration::from_secs(3600),
        ..AppSettings::default()
    };
    let app = TestApp::with_settings(Backend::Sqlite, settings)
        .await
        .unwrap();
    let first = published(&app, app.m1(), standalone_template(0, 10)).await;
    assert_eq!(ids(&app.get("/v1/me/claimable", &app.user).await), [first]);
    let mut one_left = standalone_template(0, 20);
    one_left["total_stock"] = json!(1);
    let scarce = published(&app, app.m1(), one_left).await;
    assert_eq!(
        ids(&app.get("/v1/me/claimable", &app.user).await),
        [first, scarce],
        "published just now"
    );
    let claim = format!("/v1/templates/{first}/claims");
    assert_eq!(
        app.post(&claim, &app.user, json!({})).await.status,
        StatusCode::CREATED
    );
    let r = app.get("/v1/me/claimable", &app.user).await;
    assert_eq!(r.body["items"][0]["held"], 1, "{}", r.body);

    // Someone else takes the last one; the user's own claim is refused, and from then on the
    // centre says so.
    let other = app
        .post(
            &format!("/v1/templates/{scarce}/claims"),
            &app.service,
            json!({"user_id": "u-9"}),
        )
        .await;
    assert_eq!(other.status, StatusCode::CREATED, "{}", other.body);
    let refused = app
        .post(
            &format!("/v1/templates/{scarce}/claims"),
            &app.user,
            json!({}),
        )
        .await;
    assert_eq!(refused.code(), "sold_out", "{}", refused.body);
    let r = app.get("/v1/me/claimable", &app.user).await;
    assert_eq!(
        (
            &r.body["items"][1]["sold_out"],
            &r.body["items"][1]["can_claim"]
        ),
        (&json!(true), &json!(false)),
        "{}",
        r.body
    );

    let abort = app
        .post(
            &format!("/v1/templates/{scarce}/abort"),
            app.m1(),
            json!({}),
        )
        .await;
    assert_eq!(abort.status, StatusCode::OK, "{}", abort.body);
    assert_eq!(ids(&app.get("/v1/me/claimable", &app.user).await), [first]);
    app.clock.advance(time::Duration::hours(10));
    assert_eq!(
        ids(&app.get("/v1/me/claimable", &app.user).await),
        Vec::<i64>::new(),
        "its window closed"
    );
}

/// A template's pause and resume mend the cached shelf for that template alone (issue 61 point
/// 4): the change shows at once while a template written to the database behind the cache's
/// back (no notice) does not, so the shelf was not read whole again; and one template's
/// pauses and resumes are bounded (`pause_rate`), another's untouched.
#[tokio::test]
async fn a_flipping_template_is_read_again_alone_and_bounded() {
    let settings = AppSettings {
        cache_ttl: StdDuration::from_secs(3600),
        pause_rate: coupond_api::ratelimit::Rate {
            per_second: 1,
            burst: 4,
        },
        ..AppSettings::default()
    };
    let mut app = TestApp::with_settings(Backend::Sqlite, settings)
        .await
        .unwrap();
    let flipping = published(&app, app.m1(), standalone_template(0, 10)).await;
    let other = published(&app, app.m1(), standalone_template(0, 10)).await;
    assert_eq!(
        ids(&app.get("/v1/me/claimable", &app.user).await),
        [flipping, other]
    );
    // A draft published straight in the database: no notice, so the cached shelf does not
    // know it.
    let draft = app
        .post("/v1/templates", app.m1(), standalone_template(0, 10))
        .await;
    let hidden = draft.body["id"].as_i64().unwrap();
    let id = coupond_domain::TemplateId::new(hidden).unwrap();
    let version = app.store.template(id).await.unwrap().version;
    app.store
        .publish_template(id, version, app.clock.now_ts())
        .await
        .unwrap();
    let flip = |action: &'static str| {
        let app = &app;
        async move {
            app.post(
                &format!("/v1/templates/{flipping}/{action}"),
                app.m1(),
                json!({}),
            )
            .await
        }
    };
    assert_eq!(flip("pause").await.status, StatusCode::OK);
    assert_eq!(
        ids(&app.get("/v1/me/claimable", &app.user).await),
        [other],
        "paused at once"
    );
    assert_eq!(flip("resume").await.status, StatusCode::OK);
    let shown = ids(&app.get("/v1/me/claimable", &app.user).await);
    assert_eq!(
        shown,
        [flipping, other],
        "resumed at once, {hidden} not read"
    );

    // Four flips at once are allowed, then they wait (429 with Retry-After; at most one more
    // gets through should a second pass meanwhile).
    assert_eq!(flip("pause").await.status, StatusCode::OK);
    assert_eq!(flip("resume").await.status, StatusCode::OK);
    let mut refused = None;
    for action in ["pause", "resume", "pause"] {
        let r = flip(action).await;
        assert!(matches!(r.status.as_u16(), 200 | 409 | 429), "{}", r.body);
        if r.status == StatusCode::TOO_MANY_REQUESTS {
            refused = Some(r);
            break;
        }
    }
    let refused = refused.expect("a flip past the burst is refused");
    assert!(refused.headers.contains_key("retry-after"));
    let r = app
        .post(&format!("/v1/templates/{other}/pause"), app.m1(), json!({}))
        .await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "another template is not held back"
    );
    // Read whole (a fresh process), the shelf has the template written behind its back.
    app.restart().await;
    assert!(ids(&app.get("/v1/me/claimable", &app.user).await).contains(&hidden));
}
