//! Tags are private to the platform unless it shares them with merchants, on every backend: a
//! merchant's segment naming a tag the platform holds but has not shared answers exactly as a
//! tag nobody holds (and issues nothing); once shared it reaches the tagged users, and once
//! unshared it stops again. A merchant's template audience names only shared tags. The
//! platform's own segments and audiences use every tag.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::claims::live;
use crate::support::*;

/// Shares `tag` with merchants, as the platform.
pub(crate) async fn share(app: &TestApp, tag: &str) {
    let path = format!("/v1/tags/{tag}/shared");
    let r = app
        .call(Method::PUT, &path, Some(&app.platform), None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["tag"], tag, "{}", r.body);
}

async fn unshare(app: &TestApp, tag: &str) {
    let path = format!("/v1/tags/{tag}/shared");
    let r = app
        .call(Method::DELETE, &path, Some(&app.platform), None)
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
}

async fn tag_user(app: &TestApp, user: &str, tags: Value) {
    let r = app
        .call(
            Method::PUT,
            &format!("/v1/users/{user}/tags"),
            Some(&app.platform),
            Some(json!({ "tags": tags })),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

/// What a refusal says, but for the request id: status, code, field, type, title, detail.
fn answer(r: &Reply) -> (StatusCode, Value) {
    let mut body = r.body.clone();
    if let Some(o) = body.as_object_mut() {
        o.remove("request_id");
    }
    (r.status, body)
}

/// The template's holders, as the platform sees them.
async fn holders(app: &TestApp, t: i64) -> Vec<String> {
    let r = app
        .get(&format!("/v1/templates/{t}/coupons"), &app.platform)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let mut users: Vec<String> = r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["user_id"].as_str().unwrap().to_owned())
        .collect();
    users.sort();
    users
}

/// Issues to `any` as `who`; the job's answer once the worker has run it.
async fn issue(app: &TestApp, who: &str, t: i64, any: Value) -> Reply {
    let path = format!("/v1/templates/{t}/issuances");
    let r = app.post(&path, who, json!({"segment": {"any": any}})).await;
    if r.status == StatusCode::ACCEPTED {
        let worker = app.state.issuance_worker();
        while worker.run_once().await.unwrap().is_some() {}
    }
    r
}

async fn segments_count_only_shared_tags(app: TestApp) {
    tag_user(&app, "u-1", json!(["churn-risk"])).await;
    tag_user(&app, "u-2", json!(["churn-risk", "vip"])).await;
    let t = live(&app, 10, 1, json!({})).await;
    let unknown = issue(&app, app.m1(), t, json!(["never-used"])).await;
    assert_eq!(
        (
            unknown.status,
            unknown.code(),
            unknown.body["field"].as_str()
        ),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            "no_users",
            Some("segment.any")
        ),
        "{}",
        unknown.body
    );
    // The platform holds `churn-risk` for two users, but has not shared it.
    let private = issue(&app, app.m1(), t, json!(["churn-risk"])).await;
    assert_eq!(answer(&private), answer(&unknown), "{}", private.body);
    let both = issue(&app, app.m1(), t, json!(["churn-risk", "vip"])).await;
    assert_eq!(answer(&both), answer(&unknown), "{}", both.body);
    assert_eq!(holders(&app, t).await, Vec::<String>::new());
    let jobs = app
        .get(&format!("/v1/issuances?template_id={t}"), app.m1())
        .await;
    assert_eq!(jobs.body["items"], json!([]), "{}", jobs.body);

    // Shared: the merchant's segment reaches exactly the tagged users.
    share(&app, "churn-risk").await;
    let r = issue(&app, app.m1(), t, json!(["churn-risk", "vip"])).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(r.body["requested"], 2, "{}", r.body);
    assert_eq!(holders(&app, t).await, ["u-1", "u-2"]);

    // Unshared again: the merchant is back to a tag nobody holds; the platform is not.
    tag_user(&app, "u-3", json!(["churn-risk"])).await;
    unshare(&app, "churn-risk").await;
    unshare(&app, "churn-risk").await;
    let again = issue(&app, app.m1(), t, json!(["churn-risk"])).await;
    assert_eq!(answer(&again), answer(&unknown), "{}", again.body);
    assert_eq!(holders(&app, t).await, ["u-1", "u-2"]);
    let platform = issue(&app, &app.platform, t, json!(["churn-risk"])).await;
    assert_eq!(platform.status, StatusCode::ACCEPTED, "{}", platform.body);
    assert_eq!(platform.body["requested"], 3, "{}", platform.body);
    assert_eq!(holders(&app, t).await, ["u-1", "u-2", "u-3"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segments_count_only_shared_tags_on_sqlite() {
    segments_count_only_shared_tags(TestApp::new().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segments_count_only_shared_tags_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        segments_count_only_shared_tags(app).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segments_count_only_shared_tags_on_mysql() {
    if let Some(app) = TestApp::mysql().await {
        segments_count_only_shared_tags(app).await;
    }
}

fn with_audience(any: Value) -> Value {
    let mut body = standalone_template(10, 20);
    body["audience"] = json!({"type": "tags", "any": any});
    body
}

/// A merchant's audience names only shared tags: an unshared one is refused the same way
/// whether the platform holds it for users or nobody holds it, on create and on edit.
async fn audiences_name_only_shared_tags(app: TestApp) {
    tag_user(&app, "u-1", json!(["churn-risk"])).await;
    let held = app
        .post(
            "/v1/templates",
            app.m1(),
            with_audience(json!(["churn-risk"])),
        )
        .await;
    let ghost = app
        .post("/v1/templates", app.m1(), with_audience(json!(["ghost"])))
        .await;
    for r in [&held, &ghost] {
        assert_eq!(
            (r.status, r.code(), r.body["field"].as_str()),
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                "tag_not_shared",
                Some("audience.any")
            ),
            "{}",
            r.body
        );
    }
    let draft = app
        .post("/v1/templates", app.m1(), standalone_template(10, 20))
        .await;
    assert_eq!(draft.status, StatusCode::CREATED, "{}", draft.body);
    let path = format!("/v1/templates/{}", draft.body["id"]);
    let audience = json!({"audience": {"type": "tags", "any": ["churn-risk"]}});
    let r = app.patch(&path, app.m1(), audience.clone()).await;
    assert_eq!(r.code(), "tag_not_shared", "{}", r.body);

    // The platform's own template may name any tag.
    let r = app
        .post(
            "/v1/templates",
            &app.platform,
            with_audience(json!(["churn-risk"])),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    share(&app, "churn-risk").await;
    let r = app.patch(&path, app.m1(), audience).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = app
        .post(
            "/v1/templates",
            app.m1(),
            with_audience(json!(["churn-risk"])),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audiences_name_only_shared_tags_on_sqlite() {
    audiences_name_only_shared_tags(TestApp::new().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audiences_name_only_shared_tags_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        audiences_name_only_shared_tags(app).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audiences_name_only_shared_tags_on_mysql() {
    if let Some(app) = TestApp::mysql().await {
        audiences_name_only_shared_tags(app).await;
    }
}

/// The platform lists shared tags a page at a time, by tag; sharing twice keeps the first
/// instant; a cursor it did not issue is 400; merchants cannot list, share or unshare.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_tags_are_listed_by_tag() {
    let app = TestApp::new().await;
    for tag in ["vip", "city:1", "a_b"] {
        share(&app, tag).await;
    }
    let first = app.get("/v1/tags/shared?limit=2", &app.platform).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    let tags: Vec<&Value> = first.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["tag"])
        .collect();
    assert_eq!(tags, [&json!("a_b"), &json!("city:1")], "{}", first.body);
    let cursor = first.body["next_cursor"].as_str().unwrap();
    let rest = app
        .get(
            &format!("/v1/tags/shared?limit=2&cursor={cursor}"),
            &app.platform,
        )
        .await;
    assert_eq!(rest.body["items"][0]["tag"], "vip", "{}", rest.body);
    assert!(rest.body.get("next_cursor").is_none(), "{}", rest.body);
    let shared_at = first.body["items"][0]["shared_at"].clone();
    app.clock.advance(time::Duration::hours(1));
    let path = "/v1/tags/a_b/shared";
    let again = app.call(Method::PUT, path, Some(&app.platform), None).await;
    assert_eq!(again.body["shared_at"], shared_at, "{}", again.body);
    let bad = app
        .get("/v1/tags/shared?cursor=aWQ6NQ", &app.platform)
        .await;
    assert_eq!(
        (bad.status, bad.code()),
        (StatusCode::BAD_REQUEST, "invalid_query")
    );
    let bad = app
        .call(
            Method::PUT,
            "/v1/tags/Not%20A%20Tag/shared",
            Some(&app.platform),
            None,
        )
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.body);
    for method in [Method::PUT, Method::DELETE] {
        let r = app.call(method, path, Some(app.m1()), None).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    }
    let r = app.get("/v1/tags/shared", app.m1()).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
}
