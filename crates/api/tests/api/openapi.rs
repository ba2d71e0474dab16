//! `/openapi.json` describes every route, body and error, and is a well-formed OpenAPI 3
//! document whose references all resolve. (CI also runs an external validator over it.)

use axum::http::{Method, StatusCode};
use serde_json::Value;

use crate::support::*;

fn resolve<'a>(doc: &'a Value, reference: &str) -> Option<&'a Value> {
    let path = reference.strip_prefix("#/")?;
    path.split('/').try_fold(doc, |v, part| v.get(part))
}

fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                if k == "$ref" {
                    if let Some(s) = v.as_str() {
                        out.push(s.to_owned());
                    }
                }
                collect_refs(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

#[tokio::test]
async fn document_lists_every_route_with_its_errors() {
    let app = TestApp::new().await;
    let r = app.call(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    let doc = r.body;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    for route in coupond_api::route_table() {
        let op = &doc["paths"][route.path.as_str()][route.method.as_str().to_lowercase()];
        assert!(
            op.is_object(),
            "{} {} missing from the document",
            route.method,
            route.path
        );
        let responses = op["responses"].as_object().unwrap();
        for status in ["400", "401", "403", "404", "500", "503"] {
            assert!(
                responses.contains_key(status),
                "{} {} lacks {status}",
                route.method,
                route.path
            );
        }
        if matches!(route.method, Method::POST | Method::PATCH)
            && !route.path.ends_with("/abort")
            && !route.path.ends_with("/resume")
            && !route.path.ends_with("/stop")
            && !route.path.ends_with("/publish")
            && !route.path.ends_with("/approve")
            && !route.path.ends_with("/confirm")
            && !route.path.ends_with("/cancel")
            && !route.path.ends_with("/read")
            && !route.path.ends_with("/keys/{key_id}/revoke")
            && !route.path.ends_with("/webhooks/{id}/disable")
            && !route.path.ends_with("/webhooks/{id}/ping")
            && route.path != "/v1/audits"
        {
            assert!(
                op["requestBody"].is_object(),
                "{} {} lacks its body",
                route.method,
                route.path
            );
            assert!(
                responses.contains_key("422"),
                "{} {} lacks 422",
                route.method,
                route.path
            );
        }
        if route.method != Method::GET {
            let header = op["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|p| p["name"] == "Idempotency-Key" && p["in"] == "header");
            // A quote changes nothing and keeps no answer: it takes no key.
            let keyed = !["/v1/quotes", "/v1/rules/preview"].contains(&route.path.as_str());
            assert_eq!(
                header, keyed,
                "{} {} does not document Idempotency-Key as it takes it",
                route.method, route.path
            );
            for status in ["409", "422"] {
                assert!(
                    responses.contains_key(status),
                    "{} {} lacks {status} (idempotency answers)",
                    route.method,
                    route.path
                );
            }
        }
        assert!(
            op["security"].is_array(),
            "{} {} lacks security",
            route.method,
            route.path
        );
    }
    for system in ["/healthz", "/readyz", "/metrics", "/openapi.json", "/docs"] {
        assert!(doc["paths"][system]["get"].is_object(), "{system} missing");
    }
    let mut ids = std::collections::BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let id = op["operationId"]
                .as_str()
                .unwrap_or_else(|| panic!("{method} {path} has no operationId"));
            assert!(ids.insert(id.to_owned()), "operationId {id} is not unique");
        }
    }
    let mut refs = vec![];
    collect_refs(&doc, &mut refs);
    assert!(!refs.is_empty());
    for r in refs {
        assert!(resolve(&doc, &r).is_some(), "dangling reference {r}");
    }
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
}

/// Every list pages: no route answers a bare JSON array (a client reading `items` would see
/// nothing), each answers `{"items": [...], "next_cursor"}` like the others.
#[tokio::test]
async fn no_route_answers_a_bare_array() {
    let app = TestApp::new().await;
    let doc = app
        .call(Method::GET, "/openapi.json", None, None)
        .await
        .body;
    for route in coupond_api::route_table() {
        let op = &doc["paths"][route.path.as_str()][route.method.as_str().to_lowercase()];
        for (status, answer) in op["responses"].as_object().unwrap() {
            let schema = &answer["content"]["application/json"]["schema"];
            assert_ne!(
                schema["type"], "array",
                "{} {} answers {status} with a bare array",
                route.method, route.path
            );
        }
    }
    let page = &doc["paths"]["/v1/webhooks"]["get"];
    let params: Vec<&str> = page["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(
        params.contains(&"cursor") && params.contains(&"limit"),
        "{params:?}"
    );
}
