//! What an endpoint's owner does with it besides registering: send it a test ping (a signed
//! `webhook.ping` delivery through the sender, as events go), disable it, delete it (with its
//! deliveries: a pending one is never sent). Another merchant's endpoint is a 404 for each.

use axum::http::{Method, StatusCode};
use coupond_engine::webhooks::signature;
use coupond_engine::SenderSettings;
use serde_json::{json, Value};

use crate::support::*;
use crate::webhooks::{app_with_loopback_hooks, receiver, register, sender};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pings_disable_and_delete_on_sqlite() {
    actions(app_with_loopback_hooks(Backend::Sqlite).await.unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pings_disable_and_delete_on_postgres() {
    if let Some(app) = app_with_loopback_hooks(Backend::Postgres).await {
        actions(app).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pings_disable_and_delete_on_mysql() {
    if let Some(app) = app_with_loopback_hooks(Backend::Mysql).await {
        actions(app).await;
    }
}

async fn post(app: &TestApp, cred: &str, path: &str) -> Reply {
    app.call(Method::POST, path, Some(cred), None).await
}

async fn deliveries(app: &TestApp, cred: &str, id: i64) -> Vec<Value> {
    let r = app
        .get(&format!("/v1/webhooks/{id}/deliveries"), cred)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body["items"].as_array().unwrap().clone()
}

async fn actions(app: TestApp) {
    let (base, inbox) = receiver(&[]).await;
    // Subscribed to one event type only: a ping goes whatever the types.
    let (hook, secret) =
        register(&app, app.m1(), format!("{base}/m1"), json!(["coupon.used"])).await;
    let sender = sender(&app, SenderSettings::default());

    let r = post(&app, app.m1(), &format!("/v1/webhooks/{hook}/ping")).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(
        (r.body["event_type"].as_str(), r.body["state"].as_str()),
        (Some("webhook.ping"), Some("pending"))
    );
    assert_eq!(r.body["event_id"], -1);
    assert_eq!(sender.run_once().await.unwrap(), 1);
    {
        let inbox = inbox.lock().unwrap();
        let (headers, body) = &inbox.got["m1"][0];
        assert_eq!(headers["coupond-event"], "webhook.ping");
        let sig = headers["coupond-signature"].to_str().unwrap();
        let t: i64 = sig[2..sig.find(',').unwrap()].parse().unwrap();
        assert_eq!(sig, signature(&secret, t, body));
        let body: Value = serde_json::from_str(body).unwrap();
        assert_eq!(
            (&body["type"], &body["id"], &body["data"]["webhook_id"]),
            (&json!("webhook.ping"), &json!(-1), &json!(hook))
        );
    }
    let listed = deliveries(&app, app.m1(), hook).await;
    assert_eq!(listed[0]["state"], "delivered");
    assert_eq!(listed[0]["attempts"][0]["status"], 200);
    // A second ping is a delivery of its own.
    let r = post(&app, app.m1(), &format!("/v1/webhooks/{hook}/ping")).await;
    assert_eq!(r.body["event_id"], -2, "{}", r.body);

    // Another merchant sees none of it.
    for (method, path) in [
        (Method::POST, format!("/v1/webhooks/{hook}/ping")),
        (Method::POST, format!("/v1/webhooks/{hook}/disable")),
        (Method::DELETE, format!("/v1/webhooks/{hook}")),
    ] {
        let r = app.call(method.clone(), &path, Some(app.m2()), None).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{method} {path}");
    }

    // Disabled: no more pings.
    let r = post(&app, app.m1(), &format!("/v1/webhooks/{hook}/disable")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = post(&app, app.m1(), &format!("/v1/webhooks/{hook}/ping")).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "webhook_disabled")
    );
    deleted_with_its_deliveries(&app, &base, &inbox).await;
}

/// An endpoint deleted with a delivery still pending: the delivery goes with it, unsent;
/// the endpoint, its deliveries and a second delete are 404s; the platform deletes any
/// merchant's endpoint.
async fn deleted_with_its_deliveries(app: &TestApp, base: &str, inbox: &crate::webhooks::Shared) {
    let (hook, _) = register(app, app.m1(), format!("{base}/gone"), json!(["*"])).await;
    let r = post(app, app.m1(), &format!("/v1/webhooks/{hook}/ping")).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let r = app
        .call(
            Method::DELETE,
            &format!("/v1/webhooks/{hook}"),
            Some(app.m1()),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    let sender = sender(app, SenderSettings::default());
    assert_eq!(sender.run_once().await.unwrap(), 0, "nothing left to send");
    assert!(!inbox.lock().unwrap().got.contains_key("gone"));
    for path in [
        format!("/v1/webhooks/{hook}"),
        format!("/v1/webhooks/{hook}/deliveries"),
    ] {
        assert_eq!(app.get(&path, app.m1()).await.status, StatusCode::NOT_FOUND);
    }
    let again = app
        .call(
            Method::DELETE,
            &format!("/v1/webhooks/{hook}"),
            Some(app.m1()),
            None,
        )
        .await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    let listed = app.get("/v1/webhooks", app.m1()).await;
    assert!(
        listed.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["id"] != hook),
        "{}",
        listed.body
    );

    let (other, _) = register(app, app.m2(), format!("{base}/m2"), json!(["*"])).await;
    let r = app
        .call(
            Method::DELETE,
            &format!("/v1/webhooks/{other}"),
            Some(&app.platform),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
}
