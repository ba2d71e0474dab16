//! A merchant cannot tell which addresses have accounts (issue 61 point 8): it invites, and an
//! address with an account anywhere (the platform's admin, another merchant's staff) gets the
//! same answer as a fresh one, 202 and an invitation pending, never `email_taken`. The link goes
//! only to the address (the delivery log withholds it); the account is made when its holder
//! accepts, and a taken address is told so then, by the page only its owner reads. Without an
//! email channel every merchant request is refused alike. On every backend.

use axum::http::StatusCode;
use coupond_api::AppSettings;
use coupond_domain::messaging::{Channel, MessageKind, QuietHours};
use coupond_engine::accounts::AccountError;
use coupond_engine::messaging::{ChannelRules, MessagingRules, Readers};
use coupond_store::OutboundQuery;
use serde_json::{json, Value};

use crate::support::{Backend, TestApp};

fn with_email() -> AppSettings {
    AppSettings {
        messaging: MessagingRules {
            readers: Readers::default(),
            channels: vec![ChannelRules {
                channel: Channel::Email,
                kinds: MessageKind::ALL.to_vec(),
                quiet: QuietHours::parse("").unwrap(),
                per_second: 10,
                max_attempts: 3,
            }],
        },
        ..AppSettings::default()
    }
}

fn person(email: &str, role: &str) -> Value {
    json!({"email": email, "name": "Pat", "role": role})
}

/// The keys of an answer, and its values but for those that differ by nature.
fn shape(v: &Value) -> Vec<(String, Value)> {
    let own = ["id", "email", "created_at", "expires_at"];
    let mut out: Vec<_> = v
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            let v = if own.contains(&k.as_str()) {
                Value::Null
            } else {
                v.clone()
            };
            (k.clone(), v)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The one-time token in the email queued for `address`.
async fn token_sent_to(app: &TestApp, address: &str) -> String {
    let q = OutboundQuery {
        limit: 50,
        ..OutboundQuery::default()
    };
    let sent = app.store.outbound(&q).await.unwrap();
    let mail = sent
        .iter()
        .find(|o| o.address == address && o.kind == MessageKind::OperatorInvited)
        .unwrap_or_else(|| panic!("no invitation emailed to {address}"));
    let at = mail.body.find("/console/invitation/").expect("the link") + 20;
    mail.body[at..at + 64].to_owned()
}

async fn merchants_cannot_tell_taken_addresses(app: TestApp) {
    let m1 = app.merchants[0].0.get();
    // Addresses with accounts: the platform's, and merchant 2's owner.
    for (email, role, merchant) in [
        ("boss@platform.example", "admin", None),
        ("own@m2.example", "owner", Some(app.merchants[1].0.get())),
    ] {
        let mut body = person(email, role);
        if let Some(m) = merchant {
            body["merchant_id"] = json!(m);
        }
        let r = app.post("/v1/operators", &app.platform, body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    }
    let mut answers = Vec::new();
    for email in [
        "boss@platform.example",
        "own@m2.example",
        "fresh@m1.example",
    ] {
        let r = app
            .post("/v1/operators", app.m1(), person(email, "staff"))
            .await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{email}: {}", r.body);
        assert_eq!(r.body["email"], email);
        assert_eq!(r.body["merchant_id"], m1);
        answers.push(shape(&r.body));
    }
    assert_eq!(
        answers[0], answers[2],
        "a taken address answers as a fresh one"
    );
    assert_eq!(
        answers[1], answers[2],
        "a taken address answers as a fresh one"
    );
    assert_eq!(
        answers[2].iter().find(|(k, _)| k == "status").unwrap().1,
        "pending"
    );

    // Listed alike, to merchant 1 only.
    let listed = app.get("/v1/operators/invitations", app.m1()).await;
    let states: Vec<_> = listed.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["email"].as_str().unwrap(), i["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        states,
        [
            ("boss@platform.example", "pending"),
            ("own@m2.example", "pending"),
            ("fresh@m1.example", "pending")
        ]
    );
    let other = app.get("/v1/operators/invitations", app.m2()).await;
    assert_eq!(other.body["items"], json!([]), "{}", other.body);

    // The delivery log shows each email went out, without its link.
    let log = app.get("/v1/outbound-messages", &app.platform).await;
    for m in log.body["items"].as_array().unwrap() {
        if m["kind"] == "operator_invited" {
            assert!(
                !m["body"].as_str().unwrap().contains("/console/invitation/"),
                "{m}"
            );
        }
    }

    // The link's holder accepts: a fresh address becomes merchant 1's staff; a taken one is
    // told so, and nothing is made.
    let fresh = token_sent_to(&app, "fresh@m1.example").await;
    let op = app
        .state
        .invitations()
        .accept(&fresh, "a long passphrase for fresh")
        .await
        .unwrap();
    assert_eq!(
        (op.merchant_id.map(|m| m.get()), op.has_password),
        (Some(m1), true)
    );
    let taken = token_sent_to(&app, "boss@platform.example").await;
    let refused = app
        .state
        .invitations()
        .accept(&taken, "a long passphrase for boss")
        .await;
    assert!(
        matches!(refused, Err(AccountError::EmailTaken)),
        "{refused:?}"
    );
    let staff = app.get("/v1/operators", app.m1()).await;
    let emails: Vec<_> = staff.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["email"].as_str().unwrap())
        .collect();
    assert_eq!(emails, ["fresh@m1.example"]);
    // The acceptance is in the trail, under merchant 1.
    let trail = app.get("/v1/audit", app.m1()).await;
    let actions: Vec<_> = trail.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert!(actions.contains(&"operator.invite"), "{actions:?}");
    assert!(actions.contains(&"operator.create"), "{actions:?}");
}

/// Without email, a merchant's request is refused the same way whatever the address.
async fn without_email_every_address_is_refused_alike(app: TestApp) {
    let r = app
        .post(
            "/v1/operators",
            &app.platform,
            person("boss@platform.example", "admin"),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let mut bodies = Vec::new();
    for email in ["boss@platform.example", "fresh@m1.example"] {
        let r = app
            .post("/v1/operators", app.m1(), person(email, "staff"))
            .await;
        assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
        assert_eq!(r.code(), "email_not_configured");
        let mut body = r.body;
        body.as_object_mut().unwrap().remove("request_id");
        bodies.push(body);
    }
    assert_eq!(bodies[0], bodies[1]);
    let listed = app.get("/v1/operators/invitations", app.m1()).await;
    assert_eq!(listed.body["items"], json!([]), "{}", listed.body);
}

macro_rules! on_every_backend_with {
    ($settings:expr, $case:ident: $sqlite:ident, $pg:ident, $my:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $sqlite() {
            $case(
                TestApp::with_settings(Backend::Sqlite, $settings)
                    .await
                    .unwrap(),
            )
            .await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $pg() {
            if let Some(app) = TestApp::with_settings(Backend::Postgres, $settings).await {
                $case(app).await;
            }
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $my() {
            if let Some(app) = TestApp::with_settings(Backend::Mysql, $settings).await {
                $case(app).await;
            }
        }
    };
}

on_every_backend_with!(with_email(), merchants_cannot_tell_taken_addresses:
    taken_addresses_on_sqlite, taken_addresses_on_postgres, taken_addresses_on_mysql);
on_every_backend_with!(AppSettings::default(), without_email_every_address_is_refused_alike:
    no_email_on_sqlite, no_email_on_postgres, no_email_on_mysql);
