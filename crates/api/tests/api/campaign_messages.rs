//! Campaign messages (`POST /v1/templates/{id}/messages`), on every backend: a merchant's
//! message reaches every holder's inbox once, in their locale's text, and their email where
//! they can be reached and did not turn campaigns off; a segment reaches a merchant's users
//! only through shared tags; the cap per owner per local day holds; bad input changes nothing.

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use coupond_api::AppSettings;
use coupond_domain::messaging::{Channel, MessageKind, QuietHours};
use coupond_domain::{Timestamp, Zone};
use coupond_engine::messaging::{CampaignSender, ChannelRules, MessagingRules};
use coupond_engine::{Pass, Worker};
use coupond_store::{OutboundQuery, Store};
use serde_json::json;

use crate::claims::live;
use crate::support::*;

/// Sends every campaign message recorded so far, page by page, as `serve`'s loop would.
async fn send_all(app: &TestApp) {
    let rules = MessagingRules {
        readers: coupond_engine::messaging::Readers {
            zone: Zone::UTC,
            locale: coupond_domain::messaging::Locale::parse("en").unwrap(),
        },
        channels: vec![ChannelRules {
            channel: Channel::Email,
            kinds: vec![MessageKind::Campaign],
            quiet: QuietHours::parse("").unwrap(),
            per_second: 10,
            max_attempts: 3,
        }],
    };
    let store: Arc<dyn Store> = app.store.clone();
    let sender = CampaignSender::new(
        store,
        Arc::new(app.clock.clone()),
        rules,
        "test",
        Arc::default(),
    );
    while sender.pass().await.unwrap() == Pass::Busy {}
}

async fn claim_for(app: &TestApp, t: i64, user: &str) {
    let r = app
        .post(
            &format!("/v1/templates/{t}/claims"),
            &app.service,
            json!({"user_id": user}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
}

async fn put(app: &TestApp, path: &str, body: serde_json::Value) {
    let r = app
        .call(Method::PUT, path, Some(&app.platform), Some(body))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.body);
}

async fn campaign_messages(backend: Backend) {
    let settings = AppSettings {
        campaigns_per_owner_per_day: 3,
        ..AppSettings::default()
    };
    let Some(app) = TestApp::with_settings(backend, settings).await else {
        return;
    };
    let t = live(&app, 10, 1, json!({})).await; // the clock at hour 15
    for u in ["u-1", "u-2", "u-3"] {
        claim_for(&app, t, u).await;
    }
    // u-1 reads Chinese and has an email; u-2 has one but turned campaigns off; u-3 none.
    let contact = |email: &str, locale: &str| json!({"email": email, "locale": locale});
    put(
        &app,
        "/v1/users/u-1/contact",
        contact("u1@example.com", "zh-CN"),
    )
    .await;
    put(
        &app,
        "/v1/users/u-2/contact",
        contact("u2@example.com", "en"),
    )
    .await;
    put(
        &app,
        "/v1/users/u-2/preferences",
        json!({"email": {"campaign": false}}),
    )
    .await;
    put(
        &app,
        "/v1/message-texts/campaign/zh-Hans",
        json!({"subject": "【活动】{{title}}", "body": "{{message}}（{{coupon}}）", "sms": "{{message}}"}),
    )
    .await;

    let path = format!("/v1/templates/{t}/messages");
    let body = json!({"title": "Spring sale", "message": "Ends Sunday."});
    let r = app.post(&path, app.m1(), body.clone()).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(
        (&r.body["audience"], &r.body["state"], &r.body["sent_by"]),
        (
            &json!("holders"),
            &json!("sending"),
            &json!(format!("merchant:{}", app.merchants[0].0))
        )
    );
    send_all(&app).await;
    let r = app.get(&path, app.m1()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let m = &r.body["items"][0];
    assert_eq!(
        (&m["state"], &m["recipients"], &m["queued"]),
        (&json!("sent"), &json!(3), &json!(1)),
        "{}",
        r.body
    );
    // u-1's inbox, in Chinese with the template's title.
    let inbox = app.get("/v1/me/messages", &app.user).await;
    let item = &inbox.body["items"][0];
    assert_eq!(item["title"], "【活动】Spring sale", "{}", inbox.body);
    assert!(item["body"].as_str().unwrap().starts_with("Ends Sunday.（"));
    for u in ["u-2", "u-3"] {
        let got = app.store.user_messages(&user(u), None, 10).await.unwrap();
        let titles: Vec<&str> = got.iter().map(|m| m.title.as_str()).collect();
        assert_eq!(titles, ["Spring sale"], "{u}");
    }
    // One email: u-1's (u-2 opted out, u-3 has no address).
    let sent = app
        .store
        .outbound(&OutboundQuery {
            limit: 10,
            ..OutboundQuery::default()
        })
        .await
        .unwrap();
    let to: Vec<(&str, &str)> = sent
        .iter()
        .map(|o| (o.address.as_str(), o.subject.as_str()))
        .collect();
    assert_eq!(to, [("u1@example.com", "【活动】Spring sale")]);

    who_may_send(&app, t, &body).await;
    segments_and_the_daily_cap(&app, t).await;
}

async fn who_may_send(app: &TestApp, t: i64, body: &serde_json::Value) {
    let path = format!("/v1/templates/{t}/messages");
    let r = app.post(&path, app.m2(), body.clone()).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    let r = app.post(&path, &app.user, body.clone()).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    for (bad, field) in [
        (json!({"title": "", "message": "m"}), "title"),
        (json!({"title": "t", "message": "x".repeat(501)}), "message"),
        (
            json!({"title": "t", "message": "m", "segment": {"any": []}}),
            "segment.any",
        ),
    ] {
        let r = app.post(&path, app.m1(), bad.clone()).await;
        assert_eq!(
            (r.status, r.body["field"].as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, Some(field)),
            "{bad}: {}",
            r.body
        );
    }
    let r = app
        .post(
            &path,
            app.m1(),
            json!({"title": "t", "message": "m", "stock": 1}),
        )
        .await;
    assert!(r.status.is_client_error(), "{}", r.body);
    let r = app.get(&path, app.m1()).await;
    assert_eq!(
        r.body["items"].as_array().unwrap().len(),
        1,
        "nothing recorded"
    );
}

async fn segments_and_the_daily_cap(app: &TestApp, t: i64) {
    let path = format!("/v1/templates/{t}/messages");
    for (u, tag) in [("u-7", "vip"), ("u-8", "vip"), ("u-9", "secret")] {
        put(app, &format!("/v1/users/{u}/tags"), json!({"tags": [tag]})).await;
    }
    put(app, "/v1/tags/vip/shared", json!({})).await;
    // A merchant may name only the tags the platform shares.
    let secret = json!({"title": "For VIPs", "message": "Claim yours.",
        "segment": {"any": ["vip", "secret"]}});
    let r = app.post(&path, app.m1(), secret).await;
    assert_eq!(
        (r.status, r.code(), r.body["field"].as_str()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            "tag_not_shared",
            Some("segment.any")
        ),
        "{}",
        r.body
    );
    let body = json!({"title": "For VIPs", "message": "Claim yours.",
        "segment": {"any": ["vip"]}});
    let r = app.post(&path, app.m1(), body.clone()).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    send_all(app).await;
    for (u, got) in [("u-7", 1), ("u-8", 1), ("u-9", 0)] {
        let inbox = app.store.user_messages(&user(u), None, 10).await.unwrap();
        assert_eq!(inbox.len(), got, "{u}");
    }
    // Three a day: the third today is the limit.
    let r = app
        .post(&path, app.m1(), json!({"title": "t", "message": "m"}))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let r = app
        .post(&path, app.m1(), json!({"title": "t", "message": "m"}))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "campaign_limit"),
        "{}",
        r.body
    );
    // The platform's own count is apart from the merchant's, and its messages (their
    // segments may name tags it keeps to itself) are not listed to the merchant.
    let mine = json!({"title": "Platform only", "message": "m", "segment": {"any": ["secret"]}});
    let r = app.post(&path, &app.platform, mine).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let seen = |r: &Reply| {
        r.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["title"] == "Platform only")
    };
    assert!(seen(&app.get(&path, &app.platform).await));
    assert!(!seen(&app.get(&path, app.m1()).await));
    // The next day: room again for holders; a segment asks for a claimable template, and
    // its claim window has closed.
    app.clock.set(Timestamp::parse(&at(25)).unwrap());
    let r = app
        .post(&path, app.m1(), json!({"title": "t", "message": "m"}))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let r = app.post(&path, app.m1(), body).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::CONFLICT, "not_claimable"),
        "{}",
        r.body
    );
}

fn user(s: &str) -> coupond_domain::UserId {
    coupond_domain::UserId::parse(s).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn campaign_messages_on_sqlite() {
    campaign_messages(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn campaign_messages_on_postgres() {
    campaign_messages(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn campaign_messages_on_mysql() {
    campaign_messages(Backend::Mysql).await;
}
