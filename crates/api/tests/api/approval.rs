//! Enrollment approval end to end: in an activity that requires it, a merchant's template
//! waits (`pending_approval`: not claimable, not in the platform's public reads, no bulk
//! issuance) until a platform marketing operator approves it; a rejection carries a reason
//! the merchant reads, and the merchant's edit puts it back in the queue. Support may not
//! decide, nor may the merchant; each decision is an event and an entry in the audit trail.

use axum::http::{Method, StatusCode};
use coupond_domain::OperatorRole;
use serde_json::{json, Value};
use time::Duration;

use crate::audit::{as_operator, entries, operator};
use crate::support::*;

async fn claim(app: &TestApp, id: i64) -> Reply {
    let path = format!("/v1/templates/{id}/claims");
    app.post(&path, &app.user, json!({})).await
}

/// A template of merchant 1 enrolled in a new activity of `activity` that requires approval:
/// waiting for the platform's decision.
async fn enrolled(app: &TestApp, mut activity: Value) -> i64 {
    activity["approval"] = json!("required");
    let activity = app.activity(activity).await;
    let r = app
        .post("/v1/templates", app.m1(), activity_template(activity, 500))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    r.body["id"].as_i64().unwrap()
}

fn event_kinds(r: &Reply, id: i64) -> Vec<String> {
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["data"]["template_id"] == json!(id))
        .map(|e| e["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn an_enrollment_waits_for_approval_and_a_rejection_says_why() {
    let app = TestApp::new().await;
    let mut body = activity_body(-1, 24, 48, 96);
    body["approval"] = json!("required");
    let activity = app.activity(body).await;
    let r = app
        .get(&format!("/v1/activities/{activity}"), &app.platform)
        .await;
    assert_eq!(r.body["approval"], "required", "{}", r.body);

    let r = app
        .post("/v1/templates", app.m1(), activity_template(activity, 500))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.body["id"].as_i64().unwrap();
    let path = format!("/v1/templates/{id}");
    assert_eq!(r.body["status"], "pending_approval");
    assert_eq!(r.body["review"], json!({"decision": "pending"}));
    // The merchant may not decide on its own enrollment; support may not either.
    let r = app
        .post(&format!("{path}/approve"), app.m1(), json!({}))
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    let support = operator(&app, "sue@example.com", OperatorRole::Support).await;
    let r = as_operator(
        &app,
        support,
        Method::POST,
        &format!("{path}/approve"),
        json!({}),
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    // Waiting: no bulk issuance; the platform's queue lists it.
    let r = app
        .call(
            Method::POST,
            &format!("{path}/issuances"),
            Some(app.m1()),
            None,
        )
        .await;
    assert!(r.status.is_client_error(), "{}", r.body);
    let queue = app
        .get("/v1/templates?status=pending_approval", &app.platform)
        .await;
    let ids: Vec<&Value> = queue.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["id"])
        .collect();
    assert_eq!(ids, [&json!(id)], "{}", queue.body);

    // A reason is required; marketing rejects with one, which the merchant reads.
    let mark = operator(&app, "mia@example.com", OperatorRole::Marketing).await;
    let reject = format!("{path}/reject");
    let r = as_operator(&app, mark, Method::POST, &reject, json!({"reason": " "})).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert_eq!(r.body["field"], "reason", "{}", r.body);
    let why = json!({"reason": "Stock too small for two cities"});
    let r = as_operator(&app, mark, Method::POST, &reject, why).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["status"], "rejected");
    let r = app.get(&path, app.m1()).await;
    assert_eq!(r.body["status"], "rejected");
    assert_eq!(r.body["review"]["reason"], "Stock too small for two cities");
    assert!(r.body["review"]["reviewed_at"].is_string(), "{}", r.body);
    let r = app
        .post(&format!("{path}/approve"), &app.platform, json!({}))
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert_eq!(r.code(), "not_pending");

    // The merchant's edit asks again; marketing approves; it runs with its activity.
    let r = app
        .patch(&path, app.m1(), json!({"total_stock": 300}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["status"], "pending_approval");
    assert_eq!(r.body["review"], json!({"decision": "pending"}));
    let r = as_operator(
        &app,
        mark,
        Method::POST,
        &format!("{path}/approve"),
        json!({}),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["status"], "scheduled");
    assert_eq!(r.body["review"]["decision"], "approved");

    app.clock.advance(Duration::hours(49));
    let r = claim(&app, id).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);

    let events = app.get("/v1/events?limit=200", &app.platform).await;
    let kinds = event_kinds(&events, id);
    for k in ["template.rejected", "template.approved"] {
        assert!(kinds.iter().any(|x| x == k), "{k} missing from {kinds:?}");
    }
    let trail = entries(
        &app.get(&format!("/v1/audit?object=template:{id}"), &app.platform)
            .await,
    );
    let actions: Vec<&str> = trail
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "template.approve",
            "template.update",
            "template.reject",
            "template.create"
        ],
        "{trail:?}"
    );
    assert_eq!(trail[0]["actor_name"], "mia@example.com");
    assert_eq!(
        trail[2]["after"]["reason"],
        "Stock too small for two cities"
    );
}

#[tokio::test]
async fn a_waiting_enrollment_is_not_claimable_nor_listed() {
    let app = TestApp::new().await;
    let id = enrolled(&app, activity_body(-1, 1, 2, 96)).await;
    app.clock.advance(Duration::hours(3));
    // The activity runs; the waiting template stays out of it.
    assert_eq!(claim(&app, id).await.status, StatusCode::NOT_FOUND);
    let active = app.get("/v1/templates?status=active", &app.platform).await;
    assert_eq!(active.body["items"], json!([]), "{}", active.body);
    // Approved while the activity runs: claimable at once.
    let r = app
        .post(
            &format!("/v1/templates/{id}/approve"),
            &app.platform,
            json!({}),
        )
        .await;
    assert_eq!(r.body["status"], "active", "{}", r.body);
    assert_eq!(claim(&app, id).await.status, StatusCode::CREATED);
}

/// Each decision is emailed to the merchant's enabled operators, with the reason, once
/// however often the outbox hands the event over (email configured to carry the decisions).
#[tokio::test]
async fn the_merchants_operators_are_emailed_each_decision() {
    use coupond_domain::messaging::{Channel, Locale, MessageKind, QuietHours};
    use coupond_engine::messaging::{ChannelRules, MessagingRules, Notifier};
    use coupond_engine::Observer;
    use coupond_store::{OutboundQuery, OutboxPosition};

    let app = TestApp::new().await;
    let id = enrolled(&app, activity_body(-1, 24, 48, 96)).await;
    operator(&app, "owner@m1.example", OperatorRole::Owner).await;
    operator(&app, "staff@m1.example", OperatorRole::Staff).await;
    let gone = operator(&app, "gone@m1.example", OperatorRole::Staff).await;
    app.store
        .set_operator_disabled(gone, true, app.clock.now_ts())
        .await
        .unwrap();
    let why = json!({"reason": "Stock too small for two cities"});
    let r = app
        .post(&format!("/v1/templates/{id}/reject"), &app.platform, why)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);

    let rules = MessagingRules {
        readers: coupond_engine::messaging::Readers {
            zone: coupond_domain::Zone::UTC,
            locale: Locale::english(),
        },
        channels: vec![ChannelRules {
            channel: Channel::Email,
            kinds: vec![
                MessageKind::EnrollmentApproved,
                MessageKind::EnrollmentRejected,
            ],
            quiet: QuietHours::parse("").unwrap(),
            per_second: 10,
            max_attempts: 3,
        }],
    };
    let notifier = Notifier::new(
        app.store.clone(),
        std::sync::Arc::new(app.clock.clone()),
        rules,
    );
    let events = app
        .store
        .outbox_read(OutboxPosition::default(), 1_000)
        .await
        .unwrap();
    notifier.handle(&events).await.unwrap();
    notifier.handle(&events).await.unwrap();
    let mut sent: Vec<(String, String, String)> = app
        .store
        .outbound(&OutboundQuery {
            limit: 10,
            ..OutboundQuery::default()
        })
        .await
        .unwrap()
        .into_iter()
        .map(|o| (o.address, o.subject, o.body))
        .collect();
    sent.sort();
    let emailed: Vec<&str> = sent.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(emailed, ["owner@m1.example", "staff@m1.example"]);
    assert!(sent[0].1.starts_with("Not accepted for "), "{sent:?}");
    assert!(
        sent[0].2.ends_with("Stock too small for two cities"),
        "{sent:?}"
    );
}
