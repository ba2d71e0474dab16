//! `/v1/operators`: the platform adds anyone, a merchant only its own owner and staff; a new
//! account comes with a one-time set-password link (once: an idempotent replay leaves it out);
//! emails are unique whatever their case; a merchant neither sees nor changes another's
//! operators or the platform's; a role moves only within its side; disabling is a patch.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use serde_json::{json, Value};

use crate::support::*;

fn body(email: &str, role: &str, merchant: Option<i64>) -> Value {
    let mut b = json!({"email": email, "name": "Ada Lovelace", "role": role});
    if let Some(m) = merchant {
        b["merchant_id"] = json!(m);
    }
    b
}

fn emails(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["email"].as_str().unwrap().to_owned())
        .collect()
}

async fn operators(app: TestApp) {
    let (m1, m2) = (app.merchants[0].0.get(), app.merchants[1].0.get());
    let r = app
        .post(
            "/v1/operators",
            &app.platform,
            body(" Ada@Example.com", "marketing", None),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["email"], "ada@example.com");
    assert_eq!(r.body["has_password"], false);
    let path = r.body["set_password"]["path"].as_str().unwrap();
    let token = path.strip_prefix("/console/password/").unwrap();
    assert!(
        token.len() == 64 && token.chars().all(|c| c.is_ascii_hexdigit()),
        "{path}"
    );
    let ada = r.body["id"].as_i64().unwrap();

    let owner = app
        .post(
            "/v1/operators",
            &app.platform,
            body("own@m1.example", "owner", Some(m1)),
        )
        .await;
    assert_eq!(owner.status, StatusCode::CREATED, "{}", owner.body);
    let staff = app
        .post(
            "/v1/operators",
            &app.platform,
            body("staff@m1.example", "staff", Some(m1)),
        )
        .await;
    assert_eq!(staff.status, StatusCode::CREATED, "{}", staff.body);
    assert_eq!(staff.body["merchant_id"], m1);
    let staff_id = staff.body["id"].as_i64().unwrap();

    let refused = [
        (
            app.m1(),
            body("x@m1.example", "admin", None),
            StatusCode::UNPROCESSABLE_ENTITY,
            "role",
        ),
        (
            app.m1(),
            body("x@m1.example", "staff", Some(m2)),
            StatusCode::NOT_FOUND,
            "",
        ),
        (
            &app.platform[..],
            body("ADA@example.com", "support", None),
            StatusCode::CONFLICT,
            "",
        ),
        (
            &app.platform[..],
            body("x@example.com", "owner", Some(999_999)),
            StatusCode::UNPROCESSABLE_ENTITY,
            "merchant_id",
        ),
        (
            &app.platform[..],
            body("x@example.com", "owner", None),
            StatusCode::UNPROCESSABLE_ENTITY,
            "merchant_id",
        ),
        (
            &app.platform[..],
            body("not an email", "support", None),
            StatusCode::UNPROCESSABLE_ENTITY,
            "email",
        ),
    ];
    for (key, b, status, field) in refused {
        let r = app.post("/v1/operators", key, b.clone()).await;
        assert_eq!(r.status, status, "{b}: {}", r.body);
        if !field.is_empty() {
            assert_eq!(r.body["field"], field, "{b}: {}", r.body);
        }
    }
    let r = app
        .post(
            "/v1/operators",
            &app.platform,
            json!({"email": "y@example.com", "name": "Y", "role": "root"}),
        )
        .await;
    assert!(r.status.is_client_error(), "{}", r.body);

    let all = app.get("/v1/operators", &app.platform).await;
    assert_eq!(
        emails(&all.body),
        ["ada@example.com", "own@m1.example", "staff@m1.example"]
    );
    let of_m1 = app
        .get(&format!("/v1/operators?merchant_id={m1}"), &app.platform)
        .await;
    assert_eq!(emails(&of_m1.body), ["own@m1.example", "staff@m1.example"]);
    assert_eq!(
        emails(&app.get("/v1/operators", app.m1()).await.body),
        ["own@m1.example", "staff@m1.example"]
    );
    assert!(emails(&app.get("/v1/operators", app.m2()).await.body).is_empty());
    let first = app.get("/v1/operators?limit=1", &app.platform).await;
    let cursor = first.body["next_cursor"].as_str().unwrap();
    let next = app
        .get(
            &format!("/v1/operators?limit=1&cursor={cursor}"),
            &app.platform,
        )
        .await;
    assert_eq!(emails(&next.body), ["own@m1.example"]);

    let r = app
        .patch(
            &format!("/v1/operators/{staff_id}"),
            app.m1(),
            json!({"name": "Sam"}),
        )
        .await;
    assert_eq!(
        (r.status, &r.body["name"]),
        (StatusCode::OK, &json!("Sam")),
        "{}",
        r.body
    );
    for key in [app.m1(), app.m2()] {
        let target = if key == app.m1() { ada } else { staff_id };
        let r = app
            .patch(
                &format!("/v1/operators/{target}"),
                key,
                json!({"disabled": true}),
            )
            .await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    }
    let r = app
        .patch(
            &format!("/v1/operators/{ada}"),
            &app.platform,
            json!({"role": "support"}),
        )
        .await;
    assert_eq!(r.body["role"], "support", "{}", r.body);
    let r = app
        .patch(
            &format!("/v1/operators/{ada}"),
            &app.platform,
            json!({"role": "owner"}),
        )
        .await;
    assert!(
        r.status.is_client_error() && r.body["code"] == "role_side_changed",
        "{}",
        r.body
    );
    let r = app
        .patch(
            &format!("/v1/operators/{ada}"),
            &app.platform,
            json!({"disabled": true}),
        )
        .await;
    assert!(r.body["disabled_at"].is_string(), "{}", r.body);
    let r = app
        .patch(
            &format!("/v1/operators/{ada}"),
            &app.platform,
            json!({"disabled": false}),
        )
        .await;
    assert!(r.body["disabled_at"].is_null(), "{}", r.body);
}

#[tokio::test]
async fn operators_on_sqlite() {
    operators(TestApp::new().await).await;
}

#[tokio::test]
async fn operators_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        operators(app).await;
    }
}

/// An `Idempotency-Key` replay of a creation answers the operator without the link: the link
/// is handed out once, and never kept in the idempotency table.
#[tokio::test]
async fn a_replayed_creation_leaves_the_link_out() {
    let app = TestApp::new().await;
    let send = || {
        Request::post("/v1/operators")
            .header(header::AUTHORIZATION, format!("Bearer {}", app.platform))
            .header(header::CONTENT_TYPE, "application/json")
            .header("idempotency-key", "op-1")
            .body(Body::from(
                body("kim@example.com", "finance", None).to_string(),
            ))
            .unwrap()
    };
    let first = app.send(send()).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    assert!(first.body["set_password"]["path"].is_string());
    let again = app.send(send()).await;
    assert_eq!(again.body["id"], first.body["id"], "{}", again.body);
    assert!(again.body.get("set_password").is_none(), "{}", again.body);
}

/// A lost phone: the platform turns a person's second factor off (recorded as its change);
/// nobody but the person turns one on.
#[tokio::test]
async fn an_admin_turns_a_lost_second_factor_off() {
    use coupond_engine::Clock;
    let app = TestApp::new().await;
    let accounts = coupond_engine::accounts::Accounts::new(
        app.store.clone(),
        std::sync::Arc::new(app.clock.clone()),
    );
    let email = coupond_domain::Email::parse("ada@example.com").unwrap();
    let role = coupond_domain::OperatorRole::Marketing;
    let draft = coupond_domain::OperatorDraft::new(email, "Ada".into(), role, None).unwrap();
    let ada = accounts.add(&draft, None).await.unwrap().id;
    let secret = coupond_engine::second_factor::new_secret();
    let code = coupond_engine::second_factor::code_at(&secret, app.clock.now()).unwrap();
    assert!(
        accounts
            .enable_totp(ada, &secret, &code)
            .await
            .unwrap()
            .has_totp
    );

    let path = format!("/v1/operators/{ada}");
    let r = app
        .patch(&path, &app.platform, json!({"second_factor": true}))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert_eq!(r.body["field"], "second_factor", "{}", r.body);
    let r = app
        .patch(&path, &app.platform, json!({"second_factor": false}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["has_totp"], false, "{}", r.body);
    let trail = app
        .get(&format!("/v1/audit?object=operator:{ada}"), &app.platform)
        .await;
    let actions: Vec<&str> = trail.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        ["operator.totp_off", "operator.totp_on", "operator.create"]
    );
}

/// A key an owner makes is theirs: its view names them, and once their account is disabled
/// it opens nothing, not even to make another owner (issue 61 point 7).
#[tokio::test]
async fn a_disabled_owners_keys_stop_working() {
    use crate::audit::{as_operator, operator};
    use axum::http::Method;
    use coupond_domain::OperatorRole;
    let app = TestApp::new().await;
    let m = app.merchants[0].0;
    let owner = operator(&app, "owner@shop.example", OperatorRole::Owner).await;
    let keys = format!("/v1/merchants/{m}/keys");
    let made = as_operator(&app, owner, Method::POST, &keys, json!({"label": "till"})).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    assert_eq!(made.body["operator_id"], owner.get(), "{}", made.body);
    let secret = made.body["secret"].as_str().unwrap().to_owned();
    assert_eq!(app.get(&keys, &secret).await.status, StatusCode::OK);

    let r = app
        .patch(
            &format!("/v1/operators/{owner}"),
            &app.platform,
            json!({"disabled": true}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        app.get(&keys, &secret).await.status,
        StatusCode::UNAUTHORIZED
    );
    let new_owner = json!({"email": "new@shop.example", "name": "New", "role": "owner"});
    let r = app.post("/v1/operators", &secret, new_owner).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    // The platform gives it to another person of the merchant (not to a disabled one, nor to
    // someone of another merchant), and it works again.
    let key_id = made.body["id"].as_i64().unwrap();
    let owner_path = format!("{keys}/{key_id}/owner");
    let put = |body: Value| {
        let app = &app;
        let path = owner_path.clone();
        async move {
            app.call(Method::PUT, &path, Some(&app.platform), Some(body))
                .await
        }
    };
    let r = put(json!({"operator_id": owner.get()})).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_owner"),
        "{}",
        r.body
    );
    let staff = operator(&app, "staff@shop.example", OperatorRole::Staff).await;
    let r = put(json!({"operator_id": staff.get()})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["operator_id"], staff.get());
    assert_eq!(
        app.get(&keys, &secret).await.status,
        StatusCode::OK,
        "works again"
    );
    let trail = app
        .get(&format!("/v1/audit?object=api_key:{key_id}"), &app.platform)
        .await;
    assert_eq!(
        trail.body["items"][0]["action"], "api_key.reassign",
        "{}",
        trail.body
    );
    // A key made by a key (or the command line) is nobody's.
    let by_key = app.post(&keys, app.m1(), json!({"label": "pos"})).await;
    assert_eq!(by_key.status, StatusCode::CREATED, "{}", by_key.body);
    assert!(by_key.body.get("operator_id").is_none(), "{}", by_key.body);
}
