//! The API reference's examples are real: every operation has one, and replayed in order on a
//! fresh service each answers its documented status with the documented shape. The reference
//! names who may call each operation, in words, and gives a short summary and a description.
//!
//! `COUPOND_RECORD_EXAMPLES=1 cargo test -p coupond-api --test api examples` writes the answers
//! back into `crates/api/src/openapi/examples.json` after a change of a view.

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use std::sync::Arc;

use coupond_api::openapi::{examples, Example, SceneCall, Sender};
use coupond_engine::{Dispatcher, InboxNotifier, Observer};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

use crate::support::*;

fn credential(app: &TestApp, sender: Sender) -> Option<&str> {
    match sender {
        Sender::Anyone => None,
        Sender::Platform => Some(&app.platform),
        Sender::Merchant => Some(app.m1()),
        Sender::Service => Some(&app.service),
        Sender::User => Some(&app.user),
    }
}

/// Sends one request; answers the status and the body (JSON when it parses, else the text).
async fn send(
    app: &TestApp,
    method: &str,
    uri: &str,
    sender: Sender,
    body: Option<&Value>,
    content_type: Option<&str>,
) -> (StatusCode, Value) {
    let mut req = Request::builder()
        .method(Method::from_bytes(method.as_bytes()).unwrap())
        .uri(uri);
    if let Some(c) = credential(app, sender) {
        req = req.header(header::AUTHORIZATION, format!("Bearer {c}"));
    }
    let req = match body {
        Some(Value::String(text)) => req
            .header(header::CONTENT_TYPE, content_type.unwrap_or("text/plain"))
            .body(Body::from(text.clone())),
        Some(json) => req
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(json.to_string())),
        None => req.body(Body::empty()),
    }
    .unwrap();
    let res = app.router.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, body)
}

/// The operation's method and path template, from the document.
fn route_of(doc: &Value, operation: &str) -> (String, String) {
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if op["operationId"] == operation {
                return (method.to_uppercase(), path.clone());
            }
        }
    }
    panic!("the document has no operation {operation}");
}

fn uri_of(path: &str, e: &Example) -> String {
    let mut uri = path.to_owned();
    for (name, value) in &e.path {
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        uri = uri.replace(&format!("{{{name}}}"), &text);
    }
    assert!(
        !uri.contains('{'),
        "{}: a path parameter lacks a value",
        e.operation
    );
    match &e.query {
        Some(q) => format!("{uri}?{q}"),
        None => uri,
    }
}

/// Whether `actual` has the shape of `documented`: the same keys in every object, the same
/// kind of value (null standing for any), arrays compared by their first items.
fn same_shape(documented: &Value, actual: &Value, at: &str) -> Result<(), String> {
    match (documented, actual) {
        (Value::Null, _) | (_, Value::Null) => Ok(()),
        (Value::Object(d), Value::Object(a)) => {
            let dk: Vec<_> = d.keys().collect();
            let ak: Vec<_> = a.keys().collect();
            if dk != ak {
                return Err(format!("{at}: documented keys {dk:?}, answered {ak:?}"));
            }
            d.iter()
                .try_for_each(|(k, v)| same_shape(v, &a[k], &format!("{at}.{k}")))
        }
        (Value::Array(d), Value::Array(a)) => match (d.first(), a.first()) {
            (Some(d), Some(a)) => same_shape(d, a, &format!("{at}[0]")),
            _ => Ok(()),
        },
        (Value::String(_), Value::String(_))
        | (Value::Number(_), Value::Number(_))
        | (Value::Bool(_), Value::Bool(_)) => Ok(()),
        _ => Err(format!("{at}: documented {documented}, answered {actual}")),
    }
}

/// What the document keeps of an answer: a text's first lines (metrics and pages are long),
/// and of the document itself only its head (it would hold itself again, and grow each time).
fn recorded(body: Value) -> Value {
    match body {
        Value::String(text) => {
            let head: Vec<&str> = text.lines().take(4).collect();
            Value::String(head.join("\n"))
        }
        Value::Object(doc) if doc.contains_key("openapi") => {
            let head = ["openapi", "info"].map(|k| (k.to_owned(), doc[k].clone()));
            Value::Object(head.into_iter().collect())
        }
        json => json,
    }
}

async fn set_scene(app: &TestApp, e: &Example, call: &SceneCall) {
    let (status, body) = send(
        app,
        &call.method,
        &call.path,
        call.sender,
        call.body.as_ref(),
        None,
    )
    .await;
    assert!(
        status.is_success(),
        "{}: setting the scene with {} {} answered {status}: {body}",
        e.operation,
        call.method,
        call.path
    );
}

#[tokio::test]
async fn every_example_in_the_reference_answers_as_documented() {
    let app = TestApp::new().await;
    let doc = app.get("/openapi.json", &app.platform).await.body;
    let mut all = examples();
    assert!(!all.is_empty(), "examples.json does not parse");
    let record = std::env::var("COUPOND_RECORD_EXAMPLES").is_ok();
    // The inbox fills from the outbox in the background in a running service: here the
    // dispatcher hands it every event written before each example.
    let clock = Arc::new(app.clock.clone());
    let inbox: Vec<Arc<dyn Observer>> = vec![Arc::new(InboxNotifier::new(
        app.store.clone(),
        clock.clone(),
    ))];
    let dispatcher = Dispatcher::new(app.store.clone(), clock, inbox, "examples");
    for e in all.iter_mut() {
        dispatcher.drain().await.unwrap();
        for call in &e.before {
            set_scene(&app, e, call).await;
        }
        let (method, path) = route_of(&doc, &e.operation);
        let uri = uri_of(&path, e);
        let (status, body) = send(
            &app,
            &method,
            &uri,
            e.sender,
            e.body.as_ref(),
            e.content_type.as_deref(),
        )
        .await;
        assert_eq!(
            status.as_u16(),
            e.status,
            "{} ({method} {uri}) answered {body}",
            e.operation
        );
        let is_doc = body.get("openapi").is_some();
        if record {
            e.response = (status != StatusCode::NO_CONTENT).then(|| recorded(body));
        } else if let (Some(documented), false) = (&e.response, body.is_string() || is_doc) {
            if let Err(why) = same_shape(documented, &body, "answer") {
                panic!(
                    "{}: the documented answer no longer matches ({why}); rerecord with \
                     COUPOND_RECORD_EXAMPLES=1",
                    e.operation
                );
            }
        }
    }
    if record {
        write_back(&all);
    }
}

/// Rewrites examples.json with the answers just received, keeping every other field.
fn write_back(all: &[Example]) {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/src/openapi/examples.json");
    let mut stored: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    for (entry, e) in stored.iter_mut().zip(all) {
        let map = entry.as_object_mut().unwrap();
        match &e.response {
            Some(r) => map.insert("response".into(), r.clone()),
            None => map.remove("response"),
        };
    }
    let text = serde_json::to_string_pretty(&stored).unwrap();
    std::fs::write(file, text + "\n").unwrap();
}

#[tokio::test]
async fn every_operation_has_a_summary_a_description_its_callers_and_an_example() {
    let app = TestApp::new().await;
    let doc = app.get("/openapi.json", &app.platform).await.body;
    let all = examples();
    let mut seen = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let id = op["operationId"].as_str().unwrap_or_default();
            let summary = op["summary"].as_str().unwrap_or_default();
            assert!(
                !summary.is_empty() && summary.len() <= 60 && !summary.contains('`'),
                "{method} {path}: the summary is to be one short line, not {summary:?}"
            );
            let description = op["description"].as_str().unwrap_or_default();
            assert!(
                description.len() > summary.len(),
                "{method} {path}: no description"
            );
            if path.starts_with("/v1/") {
                assert!(
                    description.contains("**Who may call:**"),
                    "{method} {path}: the description does not say who may call it"
                );
            }
            let example = all.iter().find(|e| e.operation == id);
            assert!(example.is_some(), "{method} {path} ({id}) has no example");
            if let Some(body) = op.get("requestBody") {
                let has_example = body["content"]
                    .as_object()
                    .unwrap()
                    .values()
                    .any(|c| c.get("example").is_some());
                assert!(
                    has_example,
                    "{method} {path}: the request body has no example"
                );
            }
            seen += 1;
        }
    }
    assert_eq!(
        seen,
        all.len(),
        "an example names no operation of the document"
    );
}

#[tokio::test]
async fn the_reference_says_who_may_call_in_words() {
    let app = TestApp::new().await;
    let doc = app.get("/openapi.json", &app.platform).await.body;
    let claim = doc["paths"]["/v1/templates/{id}/claims"]["post"]["description"]
        .as_str()
        .unwrap();
    assert!(claim.contains("a user (a user token"), "{claim}");
    assert!(claim.contains("the order service"), "{claim}");
    assert!(!claim.contains("the platform (a platform key)"), "{claim}");
    let revoke = doc["paths"]["/v1/coupons/{id}/revoke"]["post"]["description"]
        .as_str()
        .unwrap();
    assert!(
        revoke.contains("In the console: platform admin, support; a merchant's owner, staff."),
        "{revoke}"
    );
    let conflict = &doc["paths"]["/v1/templates/{id}/claims"]["post"]["responses"]["409"];
    assert!(
        conflict["description"]
            .as_str()
            .unwrap()
            .contains("`sold_out`"),
        "{conflict}"
    );
}
