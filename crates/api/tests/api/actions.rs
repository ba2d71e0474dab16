//! The actions a template's answer offers are exactly the ones the API accepts: for every
//! template state (standalone draft, scheduled, claimable, ended, aborted; in an enrolling,
//! a frozen and a running activity) and caller (its merchant's key, the platform's key, a
//! platform `finance` operator), each of the ten actions is tried on its own copy of the
//! template, and it succeeds exactly when `actions` named it (pending approval, approved and
//! rejected enrollments included). The console shows exactly
//! `actions` (`console/src/views/templates.rs`), so this is also the console's table.
//! Activities likewise: scheduled, enrolling, frozen, running, ended and aborted, each of
//! edit, abort and enroll (a merchant creating a template in it).

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use coupond_api::auth::Caller;
use coupond_domain::{
    ActivityAction, Email, OperatorDraft, OperatorId, OperatorRole, TemplateAction,
};
use coupond_engine::accounts::Accounts;
use serde_json::{json, Value};
use time::Duration;

use crate::support::*;

/// Who asks.
#[derive(Clone)]
enum Who {
    Key(String),
    Operator(OperatorId),
}

async fn ask(
    app: &TestApp,
    who: &Who,
    method: Method,
    path: &str,
    body: Option<(&str, String)>,
) -> Reply {
    let mut req = Request::builder().method(method).uri(path);
    req = match who {
        Who::Key(k) => req.header(header::AUTHORIZATION, format!("Bearer {k}")),
        Who::Operator(id) => req.extension(Caller::Operator(*id)),
    };
    let req = match body {
        Some((kind, text)) => req
            .header(header::CONTENT_TYPE, kind)
            .body(Body::from(text)),
        None => req.body(Body::empty()),
    };
    app.send(req.unwrap()).await
}

/// Tries `action` on template `t` (its current view `v`) as `who`; whether it was accepted.
async fn attempt(app: &TestApp, who: &Who, action: TemplateAction, t: i64, v: &Value) -> bool {
    let path = format!("/v1/templates/{t}");
    let js = |b: Value| Some(("application/json", b.to_string()));
    let later = |at: &Value| {
        let t = coupond_domain::Timestamp::parse(at.as_str().unwrap()).unwrap();
        t.plus(Duration::hours(1)).to_string()
    };
    let r = match action {
        TemplateAction::Edit => {
            ask(
                app,
                who,
                Method::PATCH,
                &path,
                js(json!({"title": "Renamed"})),
            )
            .await
        }
        TemplateAction::RaiseStock => {
            let stock = v["total_stock"].as_i64().unwrap() + 1;
            ask(
                app,
                who,
                Method::PATCH,
                &path,
                js(json!({"total_stock": stock})),
            )
            .await
        }
        TemplateAction::Extend => {
            let w = &v["claim_window"];
            let window = json!({"start": w["start"], "end": later(&w["end"])});
            ask(
                app,
                who,
                Method::PATCH,
                &path,
                js(json!({"claim_window": window})),
            )
            .await
        }
        TemplateAction::Publish => {
            ask(
                app,
                who,
                Method::POST,
                &format!("{path}/publish"),
                js(json!({})),
            )
            .await
        }
        TemplateAction::Abort => {
            ask(
                app,
                who,
                Method::POST,
                &format!("{path}/abort"),
                js(json!({})),
            )
            .await
        }
        TemplateAction::Delete => ask(app, who, Method::DELETE, &path, None).await,
        TemplateAction::Codes => {
            let codes = format!("{path}/codes");
            ask(app, who, Method::POST, &codes, js(json!({"count": 1}))).await
        }
        TemplateAction::Approve => {
            let approve = format!("{path}/approve");
            ask(app, who, Method::POST, &approve, js(json!({}))).await
        }
        TemplateAction::Reject => {
            let reject = format!("{path}/reject");
            let body = js(json!({"reason": "too little stock"}));
            ask(app, who, Method::POST, &reject, body).await
        }
        TemplateAction::Issue => {
            let upload = Some(("text/csv", "u-1\n".to_owned()));
            ask(app, who, Method::POST, &format!("{path}/issuances"), upload).await
        }
        TemplateAction::Pause | TemplateAction::Resume | TemplateAction::Stop => {
            let step = format!("{path}/{}", action.as_str());
            ask(app, who, Method::POST, &step, js(json!({}))).await
        }
    };
    assert!(
        r.status.is_success() || r.status.is_client_error(),
        "{action:?} on {t}: {} {}",
        r.status,
        r.body
    );
    r.status.is_success()
}

/// One state: a name, and how to make a template in it (as merchant 1, at day zero).
struct State {
    name: &'static str,
    body: Value,
    publish: bool,
    abort: bool,
    /// The platform's decision on it (`approve`, `reject`), made at day zero.
    review: Option<&'static str>,
}

/// The activities the states' templates are in.
struct Activities {
    enrolling: i64,
    frozen: i64,
    running: i64,
    /// Enrolling, and requiring approval.
    approving: i64,
}

fn states(a: &Activities) -> Vec<State> {
    let s = |name, body, publish, abort| State {
        name,
        body,
        publish,
        abort,
        review: None,
    };
    let reviewed = |name, review| State {
        name,
        body: activity_template(a.approving, 500),
        publish: false,
        abort: false,
        review,
    };
    let (enrolling, frozen, running) = (a.enrolling, a.frozen, a.running);
    vec![
        s("draft", standalone_template(5, 48), false, false),
        s("scheduled", standalone_template(5, 48), true, false),
        s("claimable", standalone_template(1, 48), true, false),
        s("ended", standalone_template(1, 2), true, false),
        s("aborted", standalone_template(5, 48), true, true),
        s(
            "enrolling activity",
            activity_template(enrolling, 500),
            false,
            false,
        ),
        s(
            "frozen activity",
            activity_template(frozen, 500),
            false,
            false,
        ),
        s(
            "running activity",
            activity_template(running, 500),
            false,
            false,
        ),
        reviewed("pending approval", None),
        reviewed("approved", Some("approve")),
        reviewed("rejected", Some("reject")),
    ]
}

/// A template of merchant 1 in state `s` (made at day zero; the clock moves on later).
async fn make(app: &TestApp, s: &State) -> i64 {
    let r = app.post("/v1/templates", app.m1(), s.body.clone()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}: {}", s.name, r.body);
    let id = r.body["id"].as_i64().unwrap();
    for (yes, step) in [(s.publish, "publish"), (s.abort, "abort")] {
        if yes {
            let r = app
                .post(&format!("/v1/templates/{id}/{step}"), app.m1(), json!({}))
                .await;
            assert_eq!(r.status, StatusCode::OK, "{}: {}", s.name, r.body);
        }
    }
    if let Some(step) = s.review {
        let body = json!({"reason": "not this time"});
        let path = format!("/v1/templates/{id}/{step}");
        let r = app.post(&path, &app.platform, body).await;
        assert_eq!(r.status, StatusCode::OK, "{}: {}", s.name, r.body);
    }
    id
}

#[tokio::test]
async fn offered_actions_are_exactly_the_accepted_ones() {
    let app = TestApp::new().await;
    let enrolling = app.activity(activity_body(-1, 24, 48, 96)).await;
    let frozen = app.activity(activity_body(-1, 2, 48, 96)).await;
    let running = app.activity(activity_body(-1, 1, 2, 96)).await;
    let mut approving = activity_body(-1, 24, 48, 96);
    approving["approval"] = json!("required");
    let approving = app.activity(approving).await;
    let activities = Activities {
        enrolling,
        frozen,
        running,
        approving,
    };
    let accounts = Accounts::new(app.store.clone(), Arc::new(app.clock.clone()));
    let email = Email::parse("fin@example.com").unwrap();
    let draft = OperatorDraft::new(email, "Fin".into(), OperatorRole::Finance, None).unwrap();
    let finance = accounts.add(&draft, None).await.unwrap().id;
    let callers = [
        ("merchant key", Who::Key(app.m1().to_owned())),
        ("platform key", Who::Key(app.platform.clone())),
        ("finance", Who::Operator(finance)),
    ];
    let states = states(&activities);
    // One copy of each state per caller and action, all made before the clock moves.
    let mut copies = vec![];
    for s in &states {
        for _ in 0..callers.len() * TemplateAction::ALL.len() {
            copies.push(make(&app, s).await);
        }
    }
    app.clock.advance(Duration::hours(3));

    let mut table = vec![];
    let mut copies = copies.into_iter();
    for s in &states {
        for (caller, who) in &callers {
            let mut offered_any = None;
            for action in TemplateAction::ALL {
                let t = copies.next().unwrap();
                let v = ask(&app, who, Method::GET, &format!("/v1/templates/{t}"), None).await;
                assert_eq!(v.status, StatusCode::OK, "{}", v.body);
                let offered: BTreeSet<String> = v.body["actions"]
                    .as_array()
                    .unwrap_or_else(|| panic!("no actions: {}", v.body))
                    .iter()
                    .map(|a| a.as_str().unwrap().to_owned())
                    .collect();
                offered_any.get_or_insert_with(|| offered.clone());
                let accepted = attempt(&app, who, action, t, &v.body).await;
                let says = offered.contains(action.as_str());
                if says != accepted {
                    table.push(format!(
                        "{} / {caller} / {}: offered {says}, accepted {accepted}",
                        s.name,
                        action.as_str()
                    ));
                }
            }
            if *caller == "finance" {
                assert_eq!(offered_any, Some(BTreeSet::new()), "{}", s.name);
            }
        }
    }
    assert!(
        table.is_empty(),
        "offered and accepted differ:\n{}",
        table.join("\n")
    );
}

/// Tries `action` on activity `a` as `who`; whether it was accepted.
async fn attempt_activity(app: &TestApp, who: &Who, action: ActivityAction, a: i64) -> bool {
    let path = format!("/v1/activities/{a}");
    let js = |b: Value| Some(("application/json", b.to_string()));
    let r = match action {
        ActivityAction::Edit => {
            ask(
                app,
                who,
                Method::PATCH,
                &path,
                js(json!({"title": "Renamed"})),
            )
            .await
        }
        ActivityAction::Abort => {
            ask(
                app,
                who,
                Method::POST,
                &format!("{path}/abort"),
                js(json!({})),
            )
            .await
        }
        ActivityAction::Enroll => {
            ask(
                app,
                who,
                Method::POST,
                "/v1/templates",
                js(activity_template(a, 500)),
            )
            .await
        }
        ActivityAction::Pause | ActivityAction::Resume => {
            let step = format!("{path}/{}", action.as_str());
            ask(app, who, Method::POST, &step, js(json!({}))).await
        }
    };
    assert!(
        r.status.is_success() || r.status.is_client_error(),
        "{action:?} on {a}: {} {}",
        r.status,
        r.body
    );
    r.status.is_success()
}

#[tokio::test]
async fn offered_activity_actions_are_exactly_the_accepted_ones() {
    let app = TestApp::new().await;
    let accounts = Accounts::new(app.store.clone(), Arc::new(app.clock.clone()));
    let email = Email::parse("fin@example.com").unwrap();
    let draft = OperatorDraft::new(email, "Fin".into(), OperatorRole::Finance, None).unwrap();
    let finance = accounts.add(&draft, None).await.unwrap().id;
    let callers = [
        ("merchant key", Who::Key(app.m1().to_owned())),
        ("platform key", Who::Key(app.platform.clone())),
        ("finance", Who::Operator(finance)),
    ];
    // At hour 4: scheduled, enrolling, frozen, running, ended, aborted.
    let states: [(&str, Value, bool); 6] = [
        ("scheduled", activity_body(5, 24, 48, 96), false),
        ("enrolling", activity_body(-1, 24, 48, 96), false),
        ("frozen", activity_body(-1, 2, 48, 96), false),
        ("running", activity_body(-1, 1, 2, 96), false),
        ("ended", activity_body(-1, 1, 2, 3), false),
        ("aborted", activity_body(-1, 24, 48, 96), true),
    ];
    let mut copies = vec![];
    for (_, body, abort) in &states {
        for _ in 0..callers.len() * ActivityAction::ALL.len() {
            let id = app.activity(body.clone()).await;
            if *abort {
                let r = app
                    .post(
                        &format!("/v1/activities/{id}/abort"),
                        &app.platform,
                        json!({}),
                    )
                    .await;
                assert_eq!(r.status, StatusCode::OK, "{}", r.body);
            }
            copies.push(id);
        }
    }
    app.clock.advance(Duration::hours(4));

    let mut table = vec![];
    let mut copies = copies.into_iter();
    for (state, _, _) in &states {
        for (caller, who) in &callers {
            for action in ActivityAction::ALL {
                let a = copies.next().unwrap();
                let v = ask(&app, who, Method::GET, &format!("/v1/activities/{a}"), None).await;
                assert_eq!(v.status, StatusCode::OK, "{state}: {}", v.body);
                let says = v.body["actions"]
                    .as_array()
                    .unwrap_or_else(|| panic!("no actions: {}", v.body))
                    .iter()
                    .any(|x| x == action.as_str());
                let accepted = attempt_activity(&app, who, action, a).await;
                if says != accepted {
                    table.push(format!(
                        "{state} / {caller} / {}: offered {says}, accepted {accepted}",
                        action.as_str()
                    ));
                }
            }
        }
    }
    assert!(
        table.is_empty(),
        "offered and accepted differ:\n{}",
        table.join("\n")
    );
}
