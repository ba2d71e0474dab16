//! Checkout abuse: exclusive stacking, replayed confirms, foreign locks.

use super::*;

#[tokio::test]
async fn exclusive_coupons_never_lock_together() {
    let app = TestApp::new().await;
    let x1 = claim(&app, worth(&app, 30000, "exclusive").await, "u-1").await;
    let x2 = claim(&app, worth(&app, 20000, "exclusive").await, "u-1").await;
    let s = claim(&app, worth(&app, 10000, "stackable").await, "u-1").await;
    let before = dump(&app).await;
    for (i, ids) in [
        vec![x1, x2],
        vec![x2, x1],
        vec![x1, s],
        vec![s, x1],
        vec![x2, s],
        vec![s, x1, x2],
    ]
    .into_iter()
    .enumerate()
    {
        let order_id = format!("stack-{i}");
        let r = lock(&app, &order_id, "u-1", &ids).await;
        assert_problem(
            &r,
            StatusCode::CONFLICT,
            "coupons_not_applicable",
            Some("coupon_ids"),
            &format!("{ids:?}"),
        );
        // Each coupon left out is refused for the conflict, and only one coupon would stay.
        let refused = r.body["coupons"].as_array().unwrap();
        assert_eq!(refused.len(), ids.len() - 1, "{ids:?}: {}", r.body);
        for c in refused {
            assert_eq!(
                c["reasons"],
                json!(["exclusive_conflict"]),
                "{ids:?}: {}",
                r.body
            );
        }
        assert_eq!(
            step(&app, &order_id, "confirm").await.status,
            StatusCode::NOT_FOUND,
            "nothing was locked for {ids:?}"
        );
    }
    for c in [x1, x2, s] {
        assert_eq!(status_of(&app, c, "u-1").await, "unused");
    }
    assert_unchanged(&before, &dump(&app).await, "locks of exclusive coupons");
    // Alone, each still locks.
    let r = lock(&app, "alone", "u-1", &[x1]).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confirm_replayed_at_once_uses_the_coupon_once() {
    let app = Arc::new(TestApp::new().await);
    let template = worth(&app, 50000, "stackable").await;
    let coupon = claim(&app, template, "u-1").await;
    let r = lock(&app, "replayed", "u-1", &[coupon]).await;
    assert_eq!(
        (r.status, r.body["discount"].as_i64()),
        (StatusCode::OK, Some(50000)),
        "{}",
        r.body
    );
    let mut joins = vec![];
    for i in 0..32 {
        let app = app.clone();
        joins.push(tokio::spawn(async move {
            let mut req = request(
                Method::POST,
                "/v1/orders/replayed/confirm",
                &app.service,
                None,
                None,
            );
            if i % 2 == 0 {
                req.headers_mut()
                    .insert("idempotency-key", "confirm-replayed".parse().unwrap());
            }
            app.send(req).await
        }));
    }
    for j in joins {
        let r = j.await.unwrap();
        match r.status {
            StatusCode::OK => assert_eq!(
                (r.body["state"].as_str(), r.body["discount"].as_i64()),
                (Some("confirmed"), Some(50000)),
                "{}",
                r.body
            ),
            // The keyed retries that overlap the first one with their key.
            StatusCode::CONFLICT => {
                assert_eq!(r.code(), "idempotency_in_flight", "{}", r.body);
                // A client is told when to try again.
                assert_eq!(r.headers[axum::http::header::RETRY_AFTER], "1");
            }
            other => panic!("{other}: {}", r.body),
        }
    }
    let h = app
        .get(&format!("/v1/coupons/{coupon}/history"), &app.platform)
        .await;
    let steps: Vec<(Value, Value)> = h.body["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["from"].clone(), e["to"].clone()))
        .collect();
    assert_eq!(
        steps,
        vec![
            (Value::Null, json!("unused")),
            (json!("unused"), json!("locked")),
            (json!("locked"), json!("used")),
        ]
    );
    let t = app
        .get(&format!("/v1/templates/{template}"), app.m1())
        .await;
    assert_eq!(
        (t.body["used"].as_i64(), t.body["given"].as_i64()),
        (Some(1), Some(50000)),
        "the discount is counted once: {}",
        t.body
    );
    let r = step(&app, "replayed", "cancel").await;
    assert_problem(
        &r,
        StatusCode::CONFLICT,
        "already_used",
        None,
        "cancel after confirm",
    );
    let violations = app
        .store
        .audit(app.clock.now_ts(), time::Duration::minutes(1))
        .await
        .unwrap();
    assert!(violations.is_empty(), "{violations:?}");
}

#[tokio::test]
async fn an_order_cannot_confirm_or_cancel_another_orders_lock() {
    let app = TestApp::new().await;
    let template = worth(&app, 20000, "stackable").await;
    let other = worth(&app, 10000, "stackable").await;
    let (c1, c2) = (
        claim(&app, template, "u-1").await,
        claim(&app, other, "u-1").await,
    );
    let theirs = claim(&app, template, "u-2").await;
    assert_eq!(
        lock(&app, "order-a", "u-1", &[c1]).await.status,
        StatusCode::OK
    );
    assert_eq!(
        lock(&app, "order-b", "u-1", &[c2]).await.status,
        StatusCode::OK
    );
    let before = dump(&app).await;

    // Orders that hold nothing, among them near-misses of A's id.
    for id in ["order-c", "ORDER-A", "order-a.", "order-a-", "order-"] {
        for action in ["confirm", "cancel"] {
            let r = step(&app, id, action).await;
            assert_problem(
                &r,
                StatusCode::NOT_FOUND,
                "not_found",
                None,
                &format!("{action} {id}"),
            );
        }
    }
    for id in ["order-a%20", "order-a%2Fconfirm", "order-a%00", "*"] {
        let r = step(&app, id, "confirm").await;
        assert_problem(
            &r,
            StatusCode::BAD_REQUEST,
            "invalid_path",
            Some("order_id"),
            id,
        );
    }
    let long = "a".repeat(129);
    let r = step(&app, &long, "confirm").await;
    assert_problem(
        &r,
        StatusCode::BAD_REQUEST,
        "invalid_path",
        Some("order_id"),
        "129 characters",
    );
    // Another order cannot take A's coupon, nor u-2 take u-1's.
    let r = lock(&app, "order-c", "u-1", &[c1]).await;
    assert_problem(
        &r,
        StatusCode::CONFLICT,
        "coupons_not_applicable",
        Some("coupon_ids"),
        "A's coupon",
    );
    assert_eq!(
        r.body["coupons"],
        json!([{"coupon_id": c1, "reasons": ["locked"]}])
    );
    let r = lock(&app, "order-d", "u-2", &[c1, theirs]).await;
    assert!(
        r.status.is_client_error() && r.status != StatusCode::NOT_FOUND,
        "{}: {}",
        r.status,
        r.body
    );
    assert_eq!(r.headers[header::CONTENT_TYPE], "application/problem+json");
    for id in ["order-c", "order-d"] {
        assert_eq!(
            step(&app, id, "confirm").await.status,
            StatusCode::NOT_FOUND
        );
    }
    assert_unchanged(
        &before,
        &dump(&app).await,
        "steps on orders that hold nothing",
    );

    // B's confirm and cancel touch B's coupon only.
    let r = step(&app, "order-b", "confirm").await;
    assert_eq!(
        (r.status, r.body["coupons"].as_array().map(Vec::len)),
        (StatusCode::OK, Some(1)),
        "{}",
        r.body
    );
    assert_eq!(r.body["coupons"][0]["coupon_id"], c2, "{}", r.body);
    let r = step(&app, "order-b", "cancel").await;
    assert_problem(&r, StatusCode::CONFLICT, "already_used", None, "cancel B");
    assert_eq!(
        (
            status_of(&app, c1, "u-1").await,
            status_of(&app, c2, "u-1").await,
            status_of(&app, theirs, "u-2").await
        ),
        ("locked".to_owned(), "used".to_owned(), "unused".to_owned())
    );
    let a = app.get("/v1/orders/order-a", &app.service).await;
    assert_eq!(a.body["state"], "locked");
    let r = step(&app, "order-a", "cancel").await;
    assert_eq!(r.body["state"], "cancelled", "{}", r.body);
    assert_eq!(status_of(&app, c1, "u-1").await, "unused");
    assert_eq!(status_of(&app, c2, "u-1").await, "used");
}
