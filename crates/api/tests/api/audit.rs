//! The audit trail (`GET /v1/audit`): a change made with an API key or by an operator account
//! is recorded as theirs, with the fields before and after; a refused change records nothing;
//! a merchant reads only its own merchant's entries; no route changes the trail.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use coupond_api::auth::Caller;
use coupond_domain::{Email, OperatorDraft, OperatorId, OperatorRole};
use coupond_engine::accounts::Accounts;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

use crate::support::*;

/// `method path` with `body` as operator `id` (as the console calls the API).
pub(crate) async fn as_operator(
    app: &TestApp,
    id: OperatorId,
    method: Method,
    path: &str,
    body: Value,
) -> Reply {
    let req = Request::builder()
        .method(method)
        .uri(path)
        .extension(Caller::Operator(id))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    app.send(req).await
}

pub(crate) async fn operator(app: &TestApp, email: &str, role: OperatorRole) -> OperatorId {
    let accounts = Accounts::new(app.store.clone(), Arc::new(app.clock.clone()));
    let merchant = (!role.is_platform()).then_some(app.merchants[0].0);
    let draft = OperatorDraft::new(Email::parse(email).unwrap(), "Op".into(), role, merchant);
    accounts.add(&draft.unwrap(), None).await.unwrap().id
}

pub(crate) fn entries(r: &Reply) -> Vec<Value> {
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body["items"].as_array().unwrap().clone()
}

#[tokio::test]
async fn changes_name_their_key_or_person_with_before_and_after() {
    let app = TestApp::new().await;
    // A merchant's key creates and edits a draft.
    let made = app
        .post("/v1/templates", app.m1(), standalone_template(24, 48))
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    let id = made.body["id"].as_i64().unwrap();
    let path = format!("/v1/templates/{id}");
    let r = app
        .patch(&path, app.m1(), json!({"title": "Spring sale"}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    // A refused edit records nothing.
    let r = app.patch(&path, app.m1(), json!({"total_stock": -1})).await;
    assert!(r.status.is_client_error(), "{}", r.body);
    // A person of the same merchant publishes it.
    let ada = operator(&app, "ada@example.com", OperatorRole::Staff).await;
    let publish = format!("{path}/publish");
    let r = as_operator(&app, ada, Method::POST, &publish, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);

    let object = format!("/v1/audit?object=template:{id}");
    let trail = entries(&app.get(&object, &app.platform).await);
    let actions: Vec<&str> = trail
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        ["template.publish", "template.update", "template.create"],
        "newest first: {trail:?}"
    );
    let (publish, update, create) = (&trail[0], &trail[1], &trail[2]);
    assert_eq!(publish["actor"], format!("operator:{ada}"));
    assert_eq!(publish["actor_name"], "ada@example.com");
    assert_eq!(publish["before"], json!({"status": "draft"}));
    assert_eq!(publish["after"], json!({"status": "scheduled"}));
    assert!(
        update["actor"].as_str().unwrap().starts_with("key:"),
        "{update}"
    );
    assert_eq!(update["before"], json!({"title": "10% off, at most 50"}));
    assert_eq!(update["after"], json!({"title": "Spring sale"}));
    assert_eq!(create["after"]["total_stock"], 10, "{create}");
    assert_eq!(create["merchant_id"], app.merchants[0].0.get());

    // By person: the email or the actor finds the same entry.
    let by_email = entries(
        &app.get("/v1/audit?actor=ada@example.com", &app.platform)
            .await,
    );
    assert_eq!(by_email.len(), 1, "{by_email:?}");
    let by_actor = format!("/v1/audit?actor=operator:{ada}");
    assert_eq!(entries(&app.get(&by_actor, &app.platform).await), by_email);

    // The other merchant reads none of it; the owning merchant reads it all.
    assert!(entries(&app.get(&object, app.m2()).await).is_empty());
    assert_eq!(entries(&app.get(&object, app.m1()).await).len(), 3);
}

#[tokio::test]
async fn the_trail_pages_newest_first_and_answers_csv() {
    let app = TestApp::new().await;
    for i in 0..3 {
        let body = json!({"name": format!("M{i}"), "short_name": format!("m{i}"), "cities": [1]});
        let r = app.post("/v1/merchants", &app.platform, body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    }
    let first = app.get("/v1/audit?limit=2", &app.platform).await;
    let page = entries(&first);
    assert_eq!(page.len(), 2);
    assert_eq!(page[0]["after"]["name"], "M2");
    let cursor = first.body["next_cursor"].as_str().unwrap();
    let rest = entries(
        &app.get(&format!("/v1/audit?limit=2&cursor={cursor}"), &app.platform)
            .await,
    );
    assert_eq!(rest[0]["after"]["name"], "M0", "{rest:?}");

    let req = Request::get("/v1/audit?format=csv")
        .header(header::AUTHORIZATION, format!("Bearer {}", app.platform))
        .body(Body::empty())
        .unwrap();
    let res = app.router.clone().oneshot(req).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    assert!(
        text.starts_with("id,at,actor,actor_name,action,object"),
        "{text}"
    );
    assert_eq!(text.matches("merchant.create").count(), 3, "{text}");
}

#[tokio::test]
async fn bad_filters_are_named_and_no_route_changes_the_trail() {
    let app = TestApp::new().await;
    for (q, field) in [
        ("object=template", "object"),
        ("object=template:0", "object"),
        ("object=Template:1", "object"),
        ("object=template:+1", "object"),
        ("actor=", "actor"),
        ("since=yesterday", "since"),
        ("format=xml", "format"),
    ] {
        let r = app.get(&format!("/v1/audit?{q}"), &app.platform).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{q}: {}", r.body);
        if field != "since" {
            assert_eq!(r.body["field"], field, "{q}: {}", r.body);
        }
    }
    for method in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
        let r = app
            .call(
                method.clone(),
                "/v1/audit",
                Some(&app.platform),
                Some(json!({})),
            )
            .await;
        assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
    }
    let staff = operator(&app, "sam@example.com", OperatorRole::Staff).await;
    let r = as_operator(&app, staff, Method::GET, "/v1/audit", json!({})).await;
    assert_eq!(
        r.status,
        StatusCode::FORBIDDEN,
        "merchant staff do not read the trail"
    );
}

#[tokio::test]
async fn webhook_endpoints_are_recorded_without_their_secret() {
    let sqlite = crate::support::Backend::Sqlite;
    let app = crate::webhooks::app_with_loopback_hooks(sqlite)
        .await
        .unwrap();
    let body = json!({"url": "http://127.0.0.1:9/hook", "event_types": ["*"]});
    let r = app.post("/v1/webhooks", app.m1(), body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let (id, secret) = (r.body["id"].as_i64().unwrap(), r.body["secret"].clone());
    let r = app
        .call(
            Method::POST,
            &format!("/v1/webhooks/{id}/disable"),
            Some(app.m1()),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = app
        .call(
            Method::DELETE,
            &format!("/v1/webhooks/{id}"),
            Some(app.m1()),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    let trail = entries(
        &app.get(&format!("/v1/audit?object=webhook:{id}"), app.m1())
            .await,
    );
    let actions: Vec<&str> = trail
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        ["webhook.delete", "webhook.disable", "webhook.create"]
    );
    assert_eq!(trail[2]["after"]["url"], "http://127.0.0.1:9/hook");
    assert_eq!(trail[0]["before"]["url"], "http://127.0.0.1:9/hook");
    let text = serde_json::to_string(&trail).unwrap();
    assert!(
        !text.contains(secret.as_str().unwrap()),
        "the secret leaked: {text}"
    );
}

#[tokio::test]
async fn a_revoked_key_is_recorded_once() {
    let app = TestApp::new().await;
    let m = app.merchants[0].0;
    let r = app
        .post(
            &format!("/v1/merchants/{m}/keys"),
            &app.platform,
            json!({"label": "till 3"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let key = r.body["id"].as_i64().unwrap();
    let revoke = format!("/v1/merchants/{m}/keys/{key}/revoke");
    for _ in 0..2 {
        let r = app.post(&revoke, &app.platform, json!({})).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    }
    let trail = entries(
        &app.get(&format!("/v1/audit?object=api_key:{key}"), &app.platform)
            .await,
    );
    let actions: Vec<&str> = trail
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        ["api_key.revoke", "api_key.create"],
        "a repeat records nothing"
    );
    assert_eq!(trail[1]["after"]["label"], "till 3");
    assert_eq!(trail[0]["after"], json!({"revoked": true}));
}

/// A user's tags and the tags shared with merchants are changes like any other: the trail
/// names who set them, with the tags before and after; a repeat that changes nothing records
/// nothing.
#[tokio::test]
async fn tag_changes_are_in_the_trail() {
    let app = TestApp::new().await;
    let put = |tags: Value| {
        let app = &app;
        async move {
            let r = app
                .call(
                    Method::PUT,
                    "/v1/users/u-7/tags",
                    Some(&app.platform),
                    Some(json!({ "tags": tags })),
                )
                .await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        }
    };
    put(json!(["vip"])).await;
    put(json!(["vip"])).await;
    put(json!(["vip", "student"])).await;
    let trail = entries(&app.get("/v1/audit?object=user:u-7", &app.platform).await);
    assert_eq!(trail.len(), 2, "{trail:?}");
    assert_eq!(trail[1]["action"], "user.tags");
    assert_eq!(trail[1]["before"], json!({"tags": []}));
    assert_eq!(trail[1]["after"], json!({"tags": ["vip"]}));
    assert!(trail[0]["actor"].as_str().unwrap().starts_with("key:"));

    for _ in 0..2 {
        let r = app
            .call(
                Method::PUT,
                "/v1/tags/vip/shared",
                Some(&app.platform),
                None,
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    }
    let r = app
        .call(
            Method::DELETE,
            "/v1/tags/vip/shared",
            Some(&app.platform),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    let trail = entries(&app.get("/v1/audit?object=tag:vip", &app.platform).await);
    let actions: Vec<&str> = trail
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["tag.unshare", "tag.share"], "{trail:?}");

    // A bulk upload is recorded as it starts, by the upload's id.
    let req = Request::builder()
        .method(Method::POST)
        .uri("/v1/user-tags")
        .header(header::AUTHORIZATION, format!("Bearer {}", app.platform))
        .header(header::CONTENT_TYPE, "text/csv")
        .body(Body::from("u-1,vip\nu-2,vip\n"))
        .unwrap();
    let r = app.send(req).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let object = format!("/v1/audit?object=tag_upload:{}", r.body["id"]);
    let trail = entries(&app.get(&object, &app.platform).await);
    assert_eq!(trail.len(), 1, "{trail:?}");
    assert_eq!(trail[0]["after"]["pairs"], 2);
}

/// `method path` with `body` as `credential`, from client address 198.51.100.9.
async fn from_client(
    app: &TestApp,
    method: Method,
    path: &str,
    credential: &str,
    body: Value,
) -> Reply {
    let peer = std::net::SocketAddr::from(([198, 51, 100, 9], 40_000));
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header(header::AUTHORIZATION, format!("Bearer {credential}"))
        .header(header::CONTENT_TYPE, "application/json")
        .extension(axum::extract::ConnectInfo(peer))
        .body(Body::from(body.to_string()))
        .unwrap();
    app.send(req).await
}

/// The writes a probe found missing from the trail (issue 61 point 5) each leave an entry
/// naming the caller and its client: the texts every user receives, a user's contact points
/// and choices, a campaign message, an order recorded without a coupon.
#[tokio::test]
async fn texts_contacts_choices_campaigns_and_plain_orders_are_in_the_trail() {
    let app = TestApp::new().await;
    let text = json!({"subject": "Hi", "body": "Click http://evil.example", "sms": "Hi"});
    let service = app.service.clone();
    let platform = app.platform.clone();
    let template = crate::claims::live(&app, 10, 1, json!({})).await;
    let order = json!({"order": crate::checkout::lease(&app)});
    let writes = [
        (
            Method::PUT,
            "/v1/message-texts/campaign/en".to_owned(),
            platform.clone(),
            text,
            "message_text.put",
            "message_text:campaign/en",
        ),
        (
            Method::DELETE,
            "/v1/message-texts/campaign/en".to_owned(),
            platform.clone(),
            Value::Null,
            "message_text.drop",
            "message_text:campaign/en",
        ),
        (
            Method::PUT,
            "/v1/users/u-9/contact".to_owned(),
            service.clone(),
            json!({"email": "outside@evil.example"}),
            "user.contact",
            "user:u-9",
        ),
        (
            Method::PUT,
            "/v1/users/u-9/preferences".to_owned(),
            service.clone(),
            json!({"email": {"campaign": false}}),
            "user.preferences",
            "user:u-9",
        ),
        (
            Method::POST,
            format!("/v1/templates/{template}/messages"),
            platform.clone(),
            json!({"title": "Spring", "message": "Claim now"}),
            "campaign_message.send",
            "campaign_message:",
        ),
        (
            Method::POST,
            "/v1/orders/plain-1/record".to_owned(),
            service.clone(),
            order,
            "order.record",
            "order:plain-1",
        ),
    ];
    for (method, path, credential, body, action, object) in writes {
        let r = from_client(&app, method.clone(), &path, &credential, body).await;
        assert!(r.status.is_success(), "{method} {path}: {}", r.body);
        let trail = entries(&app.get("/v1/audit", &app.platform).await);
        let e = &trail[0];
        assert_eq!(e["action"], action, "{method} {path}: {e}");
        assert!(e["object"].as_str().unwrap().starts_with(object), "{e}");
        assert!(e["actor"].as_str().unwrap().starts_with("key:"), "{e}");
        assert_eq!(e["client"], "198.51.100.9", "{e}");
    }
    let trail = entries(&app.get("/v1/audit?object=user:u-9", &app.platform).await);
    assert_eq!(
        trail.last().unwrap()["after"]["email"],
        "outside@evil.example",
        "{trail:?}"
    );
    // A replayed record changes nothing, and records nothing.
    let before = entries(&app.get("/v1/audit", &app.platform).await).len();
    let order = json!({"order": crate::checkout::lease(&app)});
    let r = from_client(
        &app,
        Method::POST,
        "/v1/orders/plain-1/record",
        &service,
        order,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        entries(&app.get("/v1/audit", &app.platform).await).len(),
        before
    );
}

/// A merchant reads the platform's changes to its objects as the platform's, without the
/// person, key, address or request behind them, and cannot find platform staff by filtering
/// on their names (issue 61 point 9); its own people and keys it reads in full.
#[tokio::test]
async fn merchants_read_the_platforms_changes_as_the_platforms() {
    let app = TestApp::new().await;
    let made = app
        .post("/v1/templates", app.m1(), standalone_template(24, 48))
        .await;
    let id = made.body["id"].as_i64().unwrap();
    let path = format!("/v1/templates/{id}");
    let staff = operator(&app, "staff@platform.example", OperatorRole::Marketing).await;
    let r = as_operator(
        &app,
        staff,
        Method::PATCH,
        &path,
        json!({"title": "Platform's"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let object = format!("/v1/audit?object=template:{id}");

    let platform_view = entries(&app.get(&object, &app.platform).await);
    assert_eq!(platform_view[0]["actor_name"], "staff@platform.example");
    let merchant_view = entries(&app.get(&object, app.m1()).await);
    let (theirs, ours) = (&merchant_view[0], &merchant_view[1]);
    assert_eq!(
        (
            &theirs["actor"],
            &theirs["actor_name"],
            &theirs["client"],
            &theirs["request_id"]
        ),
        (
            &json!("platform"),
            &json!("the platform"),
            &Value::Null,
            &Value::Null
        ),
        "{theirs}"
    );
    assert_eq!(
        theirs["after"]["title"], "Platform's",
        "what changed is still told"
    );
    assert!(
        ours["actor"].as_str().unwrap().starts_with("key:"),
        "{ours}"
    );
    let text = app.get(&object, app.m1()).await.body.to_string();
    assert!(!text.contains("staff@platform.example"), "{text}");
    // Naming a platform person finds nothing, as an unknown name does.
    for name in [
        "staff@platform.example",
        "nobody@example.com",
        &format!("operator:{staff}"),
    ] {
        let r = app.get(&format!("/v1/audit?actor={name}"), app.m1()).await;
        assert!(entries(&r).is_empty(), "{name}: {}", r.body);
    }
}
