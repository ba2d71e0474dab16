//! Promotion codes over HTTP: shared codes, generated batches and their CSV, redemption with
//! uniform refusals, rate limits, and one coupon per single-use code under concurrency.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use coupond_api::ratelimit::Rate;
use coupond_api::AppSettings;
use coupond_domain::codes::passes_check;
use serde_json::json;

use crate::claims::live;
use crate::support::*;

pub(crate) fn user_token(app: &TestApp, user: &str) -> String {
    coupond_api::JwtKeys::new(SECRET)
        .mint(
            &coupond_domain::UserId::parse(user).unwrap(),
            app.clock.now_ts(),
            time::Duration::hours(1),
        )
        .unwrap()
}

async fn redeem(app: &TestApp, code: &str, token: &str) -> Reply {
    app.call(
        Method::POST,
        &format!("/v1/codes/{code}/redeem"),
        Some(token),
        None,
    )
    .await
}

/// The CSV of a batch, as lines.
async fn csv(app: &TestApp, batch: i64, cred: &str) -> (StatusCode, Vec<String>) {
    let req = Request::builder()
        .uri(format!("/v1/code-batches/{batch}/codes"))
        .header("authorization", format!("Bearer {cred}"))
        .body(Body::empty())
        .unwrap();
    let res = tower::ServiceExt::oneshot(app.router.clone(), req)
        .await
        .unwrap();
    let status = res.status();
    let bytes = http_body_util::BodyExt::collect(res.into_body())
        .await
        .unwrap()
        .to_bytes();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    (status, text.lines().map(str::to_owned).collect())
}

/// The fields of a refusal that a prober could compare.
fn refusal(r: &Reply) -> (StatusCode, String, String, String) {
    (
        r.status,
        r.code().to_owned(),
        r.body["field"].as_str().unwrap_or("").to_owned(),
        r.body["detail"].as_str().unwrap_or("").to_owned(),
    )
}

#[tokio::test]
async fn shared_codes_claim_within_stock_and_limit() {
    let app = TestApp::new().await;
    let id = live(&app, 2, 1, json!({})).await;
    let path = format!("/v1/templates/{id}/code");
    let r = app
        .call(
            Method::PUT,
            &path,
            Some(app.m1()),
            Some(json!({"code": "spring-24"})),
        )
        .await;
    assert_eq!(
        (r.status, &r.body["code"]),
        (StatusCode::OK, &json!("SPRING24")),
        "{}",
        r.body
    );
    assert_eq!(app.get(&path, app.m1()).await.body["code"], "SPRING24");
    assert_eq!(
        app.get(&path, app.m2()).await.status,
        StatusCode::NOT_FOUND,
        "another merchant's"
    );

    // The same code on another template, or a code of a generated code's form, is refused.
    let other = live(&app, 5, 1, json!({})).await;
    let r = app
        .call(
            Method::PUT,
            &format!("/v1/templates/{other}/code"),
            Some(app.m1()),
            Some(json!({"code": "SPRING24"})),
        )
        .await;
    assert_eq!((r.status, r.code()), (StatusCode::CONFLICT, "code_taken"));
    let looks_generated = coupond_domain::codes::with_check("SPRNG2").unwrap();
    let r = app
        .call(
            Method::PUT,
            &format!("/v1/templates/{other}/code"),
            Some(app.m1()),
            Some(json!({"code": looks_generated})),
        )
        .await;
    assert_eq!(
        (r.status, r.code(), r.body["field"].as_str()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            "code_looks_generated",
            Some("code")
        )
    );

    let r = redeem(&app, "spring%2024", &app.user).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(
        (r.body["code"].as_str(), r.body["template"]["id"].as_i64()),
        (Some("SPRING24"), Some(id))
    );
    let r = redeem(&app, "SPRING24", &app.user).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "limit_reached")
    );
    assert_eq!(
        redeem(&app, "SPRING24", &user_token(&app, "u-2"))
            .await
            .status,
        StatusCode::CREATED
    );
    let r = redeem(&app, "SPRING24", &user_token(&app, "u-3")).await;
    assert_eq!((r.status, r.code()), (StatusCode::CONFLICT, "sold_out"));

    // The service may redeem for a user, naming it.
    let t = live(&app, 5, 1, json!({})).await;
    app.call(
        Method::PUT,
        &format!("/v1/templates/{t}/code"),
        Some(app.m1()),
        Some(json!({"code": "WELCOME"})),
    )
    .await;
    let r = app
        .post(
            "/v1/codes/WELCOME/redeem",
            &app.service,
            json!({"user_id": "u-9"}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["user_id"].as_str()),
        (StatusCode::CREATED, Some("u-9")),
        "{}",
        r.body
    );

    // Removing the code: it no longer redeems, and the answer is the unknown code's.
    let r = app
        .call(
            Method::DELETE,
            &format!("/v1/templates/{t}/code"),
            Some(app.m1()),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let gone = redeem(&app, "WELCOME", &app.user).await;
    let unknown = redeem(&app, "NOSUCHCODE", &app.user).await;
    assert_eq!(refusal(&gone), refusal(&unknown));
    assert_eq!(
        (unknown.status, unknown.code()),
        (StatusCode::NOT_FOUND, "invalid_code")
    );
}

#[tokio::test]
async fn generated_codes_are_single_use_and_refusals_reveal_nothing() {
    let app = TestApp::new().await;
    let id = live(&app, 100, 5, json!({})).await;
    let r = app
        .post(
            &format!("/v1/templates/{id}/codes"),
            app.m1(),
            json!({"count": 20, "prefix": "sp", "length": 8}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(
        (r.body["status"].as_str(), r.body["generated"].as_u64()),
        (Some("done"), Some(20))
    );
    let batch = r.body["id"].as_i64().unwrap();
    assert_eq!(
        r.headers["location"],
        format!("/v1/code-batches/{batch}").as_str()
    );
    assert_eq!(
        app.get(&format!("/v1/code-batches/{batch}"), app.m2())
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(csv(&app, batch, app.m2()).await.0, StatusCode::NOT_FOUND);
    // The template's batches find the job again; another merchant does not see them.
    let batches = format!("/v1/templates/{id}/code-batches");
    let r = app.get(&batches, app.m1()).await;
    assert_eq!(
        (r.status, r.body["items"][0]["id"].as_i64()),
        (StatusCode::OK, Some(batch)),
        "{}",
        r.body
    );
    assert_eq!(r.body["items"].as_array().unwrap().len(), 1);
    assert_eq!(
        app.get(&batches, &app.platform).await.body["items"][0]["id"],
        batch
    );
    assert_eq!(
        app.get(&batches, app.m2()).await.status,
        StatusCode::NOT_FOUND
    );

    let (status, lines) = csv(&app, batch, app.m1()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(lines[0], "code,redeemed_by,redeemed_at");
    let codes: Vec<String> = lines[1..]
        .iter()
        .map(|l| l.split(',').next().unwrap().to_owned())
        .collect();
    assert_eq!(codes.len(), 20);
    for c in &codes {
        assert!(
            c.starts_with("SP") && c.len() == 11 && passes_check(c),
            "{c}"
        );
    }

    // Typed loosely, the code redeems; again by its redeemer, the same coupon.
    let typed = format!("{}-{}", &codes[0][..5], &codes[0][5..]).to_lowercase();
    let first = redeem(&app, &typed, &app.user).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    assert_eq!(first.headers["idempotent-replayed"], "false");
    let again = redeem(&app, &codes[0], &app.user).await;
    assert_eq!(
        (again.status, &again.body["id"]),
        (StatusCode::CREATED, &first.body["id"])
    );
    assert_eq!(again.headers["idempotent-replayed"], "true");

    // Used by someone else, mistyped, unknown, or of an ended template: one answer.
    let used = redeem(&app, &codes[0], &user_token(&app, "u-2")).await;
    let mut typo = codes[1].clone().into_bytes();
    typo[4] = if typo[4] == b'A' { b'B' } else { b'A' };
    let typo = redeem(&app, std::str::from_utf8(&typo).unwrap(), &app.user).await;
    let unknown = redeem(&app, "SPZZZZZZZZ9", &app.user).await;
    let garbage = redeem(&app, "%21%21", &app.user).await;
    app.clock
        .set(coupond_domain::Timestamp::parse(&at(21)).unwrap());
    let ended = redeem(&app, &codes[2], &app.user).await;
    let want = refusal(&unknown);
    assert_eq!(
        (want.0, want.1.as_str()),
        (StatusCode::NOT_FOUND, "invalid_code")
    );
    for (what, r) in [
        ("used", &used),
        ("typo", &typo),
        ("garbage", &garbage),
        ("ended", &ended),
    ] {
        assert_eq!(refusal(r), want, "{what}: {}", r.body);
    }
    // Its redeemer still finds the coupon after the window.
    assert_eq!(
        redeem(&app, &codes[0], &app.user).await.body["id"],
        first.body["id"]
    );

    let (_, lines) = csv(&app, batch, app.platform.as_str()).await;
    let row = lines.iter().find(|l| l.starts_with(&codes[0])).unwrap();
    assert_eq!(row, &format!("{},u-1,{}", codes[0], at(15)));
    assert_eq!(
        app.store
            .inspect()
            .count_coupons(coupond_domain::TemplateId::new(id).unwrap())
            .await
            .unwrap(),
        1
    );
}

#[tokio::test]
async fn large_batches_are_generated_in_the_background() {
    let settings = AppSettings {
        code_batch_sync_max: 10,
        ..Default::default()
    };
    let app = TestApp::with_settings(Backend::Sqlite, settings)
        .await
        .unwrap();
    let id = live(&app, 100, 5, json!({})).await;
    let bad = app
        .post(
            &format!("/v1/templates/{id}/codes"),
            app.m1(),
            json!({"count": 1000000, "length": 6}),
        )
        .await;
    assert_eq!(
        (bad.status, bad.code(), bad.body["field"].as_str()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            "too_few_codes",
            Some("length")
        )
    );
    let r = app
        .post(
            &format!("/v1/templates/{id}/codes"),
            app.m1(),
            json!({"count": 12007}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["status"].as_str()),
        (StatusCode::ACCEPTED, Some("pending")),
        "{}",
        r.body
    );
    let batch = r.body["id"].as_i64().unwrap();
    let (status, _) = csv(&app, batch, app.m1()).await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "not downloadable while pending"
    );
    let mut steps = 0;
    while app
        .state
        .code_generator()
        .run_once()
        .await
        .unwrap()
        .is_some()
    {
        steps += 1;
    }
    assert_eq!(steps, 3, "12,007 codes in chunks of 5,000");
    let r = app
        .get(&format!("/v1/code-batches/{batch}"), app.m1())
        .await;
    assert_eq!(
        (r.body["status"].as_str(), r.body["generated"].as_u64()),
        (Some("done"), Some(12007))
    );
    let (status, lines) = csv(&app, batch, app.m1()).await;
    assert_eq!((status, lines.len()), (StatusCode::OK, 12008));
    let distinct: std::collections::HashSet<&String> = lines.iter().collect();
    assert_eq!(distinct.len(), 12008);
}

async fn one_code_many_users(app: TestApp) {
    let app = Arc::new(app);
    let id = live(&app, 100, 1, json!({})).await;
    let r = app
        .post(
            &format!("/v1/templates/{id}/codes"),
            app.m1(),
            json!({"count": 1}),
        )
        .await;
    let batch = r.body["id"].as_i64().unwrap();
    let (_, lines) = csv(&app, batch, app.m1()).await;
    let code = lines[1].split(',').next().unwrap().to_owned();
    let mut joins = vec![];
    for i in 0..40 {
        let (app, code) = (app.clone(), code.clone());
        joins.push(tokio::spawn(async move {
            let token = user_token(&app, &format!("racer-{i}"));
            redeem(&app, &code, &token).await.status
        }));
    }
    let mut created = 0;
    for j in joins {
        let status = j.await.unwrap();
        assert!(
            status == StatusCode::CREATED || status == StatusCode::NOT_FOUND,
            "{status}"
        );
        created += usize::from(status == StatusCode::CREATED);
    }
    assert_eq!(created, 1);
    assert_eq!(
        app.store
            .inspect()
            .count_coupons(coupond_domain::TemplateId::new(id).unwrap())
            .await
            .unwrap(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_use_code_gives_one_coupon_under_a_rush_on_sqlite() {
    one_code_many_users(TestApp::new().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_use_code_gives_one_coupon_under_a_rush_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        one_code_many_users(app).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_use_code_gives_one_coupon_under_a_rush_on_mysql() {
    if let Some(app) = TestApp::mysql().await {
        one_code_many_users(app).await;
    }
}

#[tokio::test]
async fn redemptions_are_rate_limited_and_failures_count() {
    let settings = AppSettings {
        redeem_rate_per_user: Rate {
            per_second: 1,
            burst: 5,
        },
        ..Default::default()
    };
    let app = TestApp::with_settings(Backend::Sqlite, settings)
        .await
        .unwrap();
    let mut answers = std::collections::BTreeMap::new();
    for i in 0..50 {
        let r = redeem(&app, &format!("GUESS{i:04}"), &app.user).await;
        if r.status == StatusCode::TOO_MANY_REQUESTS {
            assert!(
                r.headers["retry-after"]
                    .to_str()
                    .unwrap()
                    .parse::<u64>()
                    .unwrap()
                    >= 1
            );
        }
        *answers.entry(r.code().to_owned()).or_insert(0) += 1;
    }
    assert_eq!(answers.get("invalid_code"), Some(&5), "{answers:?}");
    assert_eq!(answers.get("rate_limited"), Some(&45), "{answers:?}");
    // Another user is not affected.
    let r = redeem(&app, "GUESS", &user_token(&app, "u-2")).await;
    assert_eq!(r.code(), "invalid_code");
}
