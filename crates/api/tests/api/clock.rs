//! Statuses follow the injected clock across every window boundary, and edits stop when an
//! activity freezes.

use axum::http::StatusCode;
use coupond_domain::Timestamp;
use serde_json::json;
use time::Duration;

use crate::support::*;

fn set(app: &TestApp, hours: i64, delta_us: i64) {
    app.clock.set(
        Timestamp::parse(&at(hours))
            .unwrap()
            .plus(Duration::microseconds(delta_us)),
    );
}

#[tokio::test]
async fn activity_and_template_statuses_follow_the_clock() {
    let app = TestApp::new().await;
    // Enrollment [1h, 24h), run [48h, 96h); the freeze (5 min) falls inside the gap.
    let id = app.activity(activity_body(1, 24, 48, 96)).await;
    let path = format!("/v1/activities/{id}");
    set(&app, 1, 0);
    let r = app
        .post("/v1/templates", app.m1(), activity_template(id, 2000))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let tpl = format!("/v1/templates/{}", r.body["id"]);

    // (hours, microseconds offset, activity status, template status)
    let cases = [
        (1, -1, "scheduled", "scheduled"),
        (1, 0, "enrolling", "scheduled"),
        (24, -1, "enrolling", "scheduled"),
        (24, 0, "frozen", "scheduled"),
        (48, -1, "frozen", "scheduled"),
        (48, 0, "running", "active"),
        (96, -1, "running", "active"),
        (96, 0, "ended", "ended"),
        // Relative validity: 7 days after claiming ends.
        (96 + 7 * 24, -1, "ended", "ended"),
        (96 + 7 * 24, 0, "ended", "expired"),
    ];
    for (h, us, activity_status, template_status) in cases {
        set(&app, h, us);
        let a = app.get(&path, &app.platform).await;
        assert_eq!(
            a.body["status"], activity_status,
            "activity at {h}h{us:+}us"
        );
        let t = app.get(&tpl, app.m1()).await;
        assert_eq!(
            t.body["status"], template_status,
            "template at {h}h{us:+}us"
        );
        let listed = app
            .get(
                &format!("/v1/activities?status={activity_status}"),
                &app.platform,
            )
            .await;
        assert_eq!(
            listed.body["items"].as_array().unwrap().len(),
            1,
            "list by {activity_status} at {h}h{us:+}us"
        );
        let listed = app
            .get(&format!("/v1/templates?status={template_status}"), app.m1())
            .await;
        assert_eq!(
            listed.body["items"].as_array().unwrap().len(),
            1,
            "list by {template_status} at {h}h{us:+}us"
        );
    }
}

#[tokio::test]
async fn standalone_template_status_follows_publish_and_clock() {
    let app = TestApp::new().await;
    let r = app
        .post("/v1/templates", app.m1(), standalone_template(10, 20))
        .await;
    let path = format!("/v1/templates/{}", r.body["id"]);
    set(&app, 15, 0);
    assert_eq!(
        app.get(&path, app.m1()).await.body["status"],
        "draft",
        "unpublished stays draft"
    );
    let r = app
        .post(&format!("{path}/publish"), app.m1(), json!({}))
        .await;
    assert_eq!(r.body["status"], "active", "{}", r.body);
    let r = app
        .patch(&path, app.m1(), json!({"title": "late change"}))
        .await;
    // Claimable: only more stock and later ends may change now.
    assert_eq!(
        (r.status, r.code(), r.body["field"].as_str()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            "fixed_once_claimable",
            Some("title")
        )
    );
    set(&app, 20, 0);
    let r = app
        .patch(&path, app.m1(), json!({"total_stock": 500}))
        .await;
    assert_eq!((r.status, r.code()), (StatusCode::CONFLICT, "not_editable"));
    assert_eq!(app.get(&path, app.m1()).await.body["status"], "ended");
    set(&app, 44, 0);
    assert_eq!(app.get(&path, app.m1()).await.body["status"], "expired");

    // A draft whose claim window has passed cannot be published.
    let r = app
        .post("/v1/templates", app.m1(), standalone_template(10, 20))
        .await;
    let r = app
        .post(
            &format!("/v1/templates/{}/publish", r.body["id"]),
            app.m1(),
            json!({}),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "claim_window_passed")
    );
}

#[tokio::test]
async fn nothing_is_created_or_edited_once_the_activity_freezes() {
    let app = TestApp::new().await;
    // Enrollment runs up to the start: the freeze period (5 minutes) cuts it short.
    let id = app.activity(activity_body(-1, 48, 48, 96)).await;
    let r = app
        .post("/v1/templates", app.m1(), activity_template(id, 2000))
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let tpl = format!("/v1/templates/{}", r.body["id"]);
    let freeze_at = Timestamp::parse(&at(48))
        .unwrap()
        .minus(Duration::minutes(5));

    app.clock.set(freeze_at.minus(Duration::microseconds(1)));
    let r = app
        .patch(&tpl, app.m1(), json!({"title": "just in time"}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);

    app.clock.set(freeze_at);
    let before = app.row_counts().await;
    let r = app
        .post("/v1/templates", app.m1(), activity_template(id, 2000))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "activity_frozen")
    );
    let r = app
        .patch(&tpl, app.m1(), json!({"title": "too late"}))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "activity_frozen")
    );
    let r = app
        .patch(
            &format!("/v1/activities/{id}"),
            &app.platform,
            json!({"title": "too late"}),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "activity_frozen")
    );
    assert_eq!(app.row_counts().await, before);
    assert_eq!(app.get(&tpl, app.m1()).await.body["title"], "just in time");

    app.clock.set(Timestamp::parse(&at(50)).unwrap());
    let r = app
        .post("/v1/templates", app.m1(), activity_template(id, 2000))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "enrollment_closed")
    );
}

#[tokio::test]
async fn activity_edits_must_keep_enrolled_templates_valid() {
    let app = TestApp::new().await;
    let id = app.activity(activity_body(-1, 24, 48, 96)).await;
    app.post("/v1/templates", app.m1(), activity_template(id, 4000))
        .await;
    let r = app
        .patch(
            &format!("/v1/activities/{id}"),
            &app.platform,
            json!({"value_max": 3000}),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "templates_conflict"),
        "{}",
        r.body
    );
    let r = app
        .patch(
            &format!("/v1/activities/{id}"),
            &app.platform,
            json!({"value_max": 4000}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

#[tokio::test]
async fn templates_following_the_run_window_move_with_it() {
    let app = TestApp::new().await;
    let id = app.activity(activity_body(-1, 24, 48, 96)).await;
    let follows = app
        .post("/v1/templates", app.m1(), activity_template(id, 2000))
        .await;
    assert_eq!(follows.body["claim_window_follows_activity"], true);
    let mut own = activity_template(id, 2000);
    own["claim_window"] = json!({"start": at(50), "end": at(60)});
    let own = app.post("/v1/templates", app.m1(), own).await;
    assert_eq!(
        own.body["claim_window_follows_activity"], false,
        "{}",
        own.body
    );
    let r = app
        .patch(
            &format!("/v1/activities/{id}"),
            &app.platform,
            json!({"run": {"start": at(30), "end": at(120)}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let moved = app
        .get(&format!("/v1/templates/{}", follows.body["id"]), app.m1())
        .await;
    assert_eq!(
        moved.body["claim_window"],
        json!({"start": at(30), "end": at(120)})
    );
    assert_eq!(moved.body["expires_at"], at(120 + 7 * 24));
    let kept = app
        .get(&format!("/v1/templates/{}", own.body["id"]), app.m1())
        .await;
    assert_eq!(
        kept.body["claim_window"],
        json!({"start": at(50), "end": at(60)})
    );
    // A run that no longer covers a template's own window is refused.
    let r = app
        .patch(
            &format!("/v1/activities/{id}"),
            &app.platform,
            json!({"run": {"start": at(55), "end": at(120)}}),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "templates_conflict")
    );
}
