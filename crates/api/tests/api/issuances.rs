//! Bulk issuance over HTTP on both backends: JSON lists answered when done, uploads handled by
//! the worker chunk by chunk, every user at most once, refusals counted, bad lines reported.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use coupond_engine::issuance::CHUNK;
use serde_json::{json, Value};

use crate::claims::live;
use crate::support::*;

async fn upload(app: &TestApp, template: i64, text: String, cred: &str) -> Reply {
    let req = Request::builder()
        .method("POST")
        .uri(format!("/v1/templates/{template}/issuances"))
        .header("authorization", format!("Bearer {cred}"))
        .header("content-type", "text/csv")
        .body(Body::from(text))
        .unwrap();
    app.send(req).await
}

fn counts(job: &Value) -> (u64, u64, u64, u64, u64, u64) {
    let n = |k: &str| job[k].as_u64().unwrap();
    (
        n("issued"),
        n("skipped"),
        n("sold_out"),
        n("not_eligible"),
        n("duplicates"),
        n("invalid"),
    )
}

async fn issuance_flows(app: TestApp) {
    // Stock 2,100, one per user; u-1 already holds one.
    let t = live(&app, 2_100, 1, json!({})).await;
    app.post(
        &format!("/v1/templates/{t}/claims"),
        &app.service,
        json!({"user_id": "u-1"}),
    )
    .await;
    let r = app
        .post(
            &format!("/v1/templates/{t}/issuances"),
            app.m1(),
            json!({"user_ids": ["u-1", "u-2", "u-3", "u-2", "bad id!"]}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["state"], "done");
    assert_eq!(counts(&r.body), (2, 1, 0, 0, 1, 1));
    // Done in the instant it started: no rate to tell, rather than a rate of 0.
    assert_eq!(r.body.get("rate_per_second"), None, "{}", r.body);
    assert_eq!(
        r.body["invalid_lines"],
        json!([{"line": 5, "text": "bad id!"}])
    );
    let job = r.body["id"].as_i64().unwrap();
    assert_eq!(
        app.get(&format!("/v1/issuances/{job}"), app.m1())
            .await
            .body,
        r.body
    );
    assert_eq!(
        app.get(&format!("/v1/issuances/{job}"), app.m2())
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    // The template's jobs find it again; another merchant's key does not.
    let jobs = format!("/v1/issuances?template_id={t}");
    let r = app.get(&jobs, app.m1()).await;
    assert_eq!(r.body["items"].as_array().unwrap().len(), 1, "{}", r.body);
    assert_eq!(r.body["items"][0]["id"], job);
    assert_eq!(
        app.get(&jobs, &app.platform).await.body["items"][0]["id"],
        job
    );
    assert_eq!(app.get(&jobs, app.m2()).await.status, StatusCode::NOT_FOUND);
    let r = app.get("/v1/issuances", app.m1()).await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (StatusCode::BAD_REQUEST, Some("template_id"))
    );
    let wallet = app.get("/v1/users/u-2/coupons", &app.service).await;
    assert_eq!(wallet.body["items"].as_array().unwrap().len(), 1);

    // An upload: answered at once, issued by the worker a chunk per transaction, until the
    // stock runs out (2,100 - 3 = 2,097 left for 2,500 users).
    let mut text = String::from("user_id\n");
    for i in 0..2_500 {
        text.push_str(&format!("bulk-{i}\n"));
    }
    text.push_str("bulk-7\n\n!!!\n");
    let r = upload(&app, t, text, app.m1()).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(
        (r.body["state"].as_str(), r.body["requested"].as_u64()),
        (Some("pending"), Some(2_500))
    );
    assert_eq!(
        r.body["invalid_lines"],
        json!([{"line": 2504, "text": "!!!"}])
    );
    assert_eq!(r.body.get("rate_per_second"), None, "not started");
    let job = r.body["id"].as_i64().unwrap();
    let worker = app.state.issuance_worker();
    let mut steps = 0;
    while let Some(j) = worker.run_once().await.unwrap() {
        steps += 1;
        assert!(j.next_user <= j.requested);
        // A second between chunks: the job takes (steps - 1) seconds.
        app.clock.advance(time::Duration::seconds(1));
    }
    assert_eq!(steps, 2_500usize.div_ceil(CHUNK as usize));
    let r = app
        .get(&format!("/v1/issuances/{job}"), &app.platform)
        .await;
    assert_eq!(r.body["state"], "done", "{}", r.body);
    assert_eq!(counts(&r.body), (2_097, 0, 403, 0, 1, 1));
    assert_eq!(r.body["rate_per_second"], 2_097.0 / (steps as f64 - 1.0));
    let audit = app
        .store
        .inspect()
        .audit_template(coupond_domain::TemplateId::new(t).unwrap())
        .await
        .unwrap();
    assert_eq!(
        (audit.coupons, audit.claimed, audit.max_per_user),
        (2_100, 2_100, 1)
    );
    let issued = app
        .store
        .inspect()
        .events_after(0, 100_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == coupond_store::events::kind::COUPON_ISSUED)
        .count();
    assert_eq!(issued, 2 + 2_097);

    // A template that is not claimable: the job fails and says why, issuing nothing.
    let later = live(
        &app,
        10,
        1,
        json!({"claim_window": {"start": at(30), "end": at(40)}}),
    )
    .await;
    let r = upload(&app, later, "x-1\nx-2\n".into(), app.m1()).await;
    let job = r.body["id"].as_i64().unwrap();
    worker.run_once().await.unwrap();
    let r = app.get(&format!("/v1/issuances/{job}"), app.m1()).await;
    assert_eq!(r.body["state"], "failed");
    assert!(
        r.body["error"].as_str().unwrap().contains("scheduled"),
        "{}",
        r.body
    );
    assert_eq!(r.body["issued"], 0);

    // Bad requests write nothing.
    let r = upload(&app, t, "\n\n".into(), app.m1()).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "no_users")
    );
    let r = app
        .post(
            &format!("/v1/templates/{t}/issuances"),
            app.m1(),
            json!({"user_ids": []}),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_value")
    );
    let r = upload(&app, t, "u-9\n".into(), app.m2()).await;
    assert_eq!(
        r.status,
        StatusCode::NOT_FOUND,
        "another merchant's template"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_issuance_on_sqlite() {
    issuance_flows(TestApp::new().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_issuance_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        issuance_flows(app).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_issuance_on_mysql() {
    if let Some(app) = TestApp::mysql().await {
        issuance_flows(app).await;
    }
}

#[tokio::test]
async fn audiences_and_limits_count_as_skipped() {
    let app = TestApp::new().await;
    let t = live(
        &app,
        100,
        2,
        json!({"audience": {"type": "users", "ids": ["vip-1", "vip-2"]}}),
    )
    .await;
    let r = app
        .post(
            &format!("/v1/templates/{t}/issuances"),
            app.m1(),
            json!({"user_ids": ["vip-1", "someone", "vip-2"]}),
        )
        .await;
    assert_eq!(counts(&r.body), (2, 0, 0, 1, 0, 0), "{}", r.body);
    // Issuing again: each VIP takes its second (limit 2); a third run finds them full.
    app.post(
        &format!("/v1/templates/{t}/issuances"),
        app.m1(),
        json!({"user_ids": ["vip-1", "vip-2"]}),
    )
    .await;
    let r = app
        .post(
            &format!("/v1/templates/{t}/issuances"),
            app.m1(),
            json!({"user_ids": ["vip-1", "vip-2"]}),
        )
        .await;
    assert_eq!(counts(&r.body), (0, 2, 0, 0, 0, 0));
    let oversized = "u\n".repeat(40_000_000 / 2);
    let r = upload(&app, t, oversized.repeat(2), app.m1()).await;
    assert!(
        r.status == StatusCode::PAYLOAD_TOO_LARGE || r.status == StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        r.status
    );
}
