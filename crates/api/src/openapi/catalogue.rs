//! What the handlers' annotations leave to data, added to every operation of the document:
//! who may call it (from [`route_table`], the table the guard enforces), the error codes it
//! answers beyond the common ones, and a request and response example.
//!
//! The examples live in `examples.json`, in the order of a story that runs on a fresh database
//! (the API tests replay it against the service and compare each answer with the documented
//! status and shape), so no example in the reference is one the service would refuse.

use std::collections::BTreeMap;

use axum::http::Method;
use coupond_domain::OperatorRole;
use serde::Deserialize;
use serde_json::Value;
use utoipa::openapi::path::Operation;
use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};
use utoipa::Modify;

use crate::routes::route_table;
use crate::Role;

/// Who sends an example: the fixture's platform, first merchant, order service or user, or
/// nobody (the system routes).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Sender {
    Anyone,
    Platform,
    Merchant,
    Service,
    User,
}

/// A request the replay sends before an example, to set the scene; not shown in the document.
#[derive(Clone, Debug, Deserialize)]
pub struct SceneCall {
    pub method: String,
    pub path: String,
    #[serde(rename = "as")]
    pub sender: Sender,
    #[serde(default)]
    pub body: Option<Value>,
}

/// One operation's example and the error codes it answers beyond the common ones.
#[derive(Clone, Debug, Deserialize)]
pub struct Example {
    /// The operation's `operationId`.
    pub operation: String,
    #[serde(rename = "as")]
    pub sender: Sender,
    /// Path parameters by name.
    #[serde(default)]
    pub path: BTreeMap<String, Value>,
    /// The query string, without `?`.
    #[serde(default)]
    pub query: Option<String>,
    /// The request body: JSON, or text when `content_type` says so.
    #[serde(default)]
    pub body: Option<Value>,
    #[serde(default)]
    pub content_type: Option<String>,
    /// The status the example answers.
    pub status: u16,
    /// The answer the example got when last recorded (its shape is checked by the replay).
    #[serde(default)]
    pub response: Option<Value>,
    #[serde(default)]
    pub before: Vec<SceneCall>,
    /// Error codes by status, beyond those every route may answer.
    #[serde(default)]
    pub errors: BTreeMap<String, Vec<String>>,
}

/// The examples, in the order they run.
pub const EXAMPLES_JSON: &str = include_str!("examples.json");

/// Every example, in the order of the story; empty (and caught by the tests) if the file does
/// not parse.
pub fn examples() -> Vec<Example> {
    serde_json::from_str(EXAMPLES_JSON).unwrap_or_default()
}

/// Adds roles, error codes and examples to every operation.
pub struct Catalogue;

impl Modify for Catalogue {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let examples = examples();
        let routes = route_table();
        for (path, item) in doc.paths.paths.iter_mut() {
            let ops = [
                (Method::GET, item.get.as_mut()),
                (Method::POST, item.post.as_mut()),
                (Method::PUT, item.put.as_mut()),
                (Method::PATCH, item.patch.as_mut()),
                (Method::DELETE, item.delete.as_mut()),
            ];
            for (method, op) in ops {
                let Some(op) = op else { continue };
                let mut text = Vec::new();
                if let Some(route) = routes
                    .iter()
                    .find(|r| r.method == method && r.path == path.as_str())
                {
                    text.push(callers(route.roles, route.area));
                }
                let example = examples
                    .iter()
                    .find(|e| op.operation_id.as_deref() == Some(e.operation.as_str()));
                if let Some(e) = example {
                    if let Some(errors) = error_codes(op, e) {
                        text.push(errors);
                    }
                    attach_examples(op, e);
                }
                if !text.is_empty() {
                    let mut d = op.description.take().unwrap_or_default();
                    for t in text {
                        if !d.is_empty() {
                            d.push_str("\n\n");
                        }
                        d.push_str(&t);
                    }
                    op.description = Some(d);
                }
            }
        }
    }
}

/// "Who may call" in words: the kinds of credential the guard admits, and the console roles
/// whose area covers the route.
fn callers(roles: &[Role], area: coupond_domain::Area) -> String {
    let who: Vec<&str> = roles
        .iter()
        .map(|r| match r {
            Role::Platform => "the platform (a platform key)",
            Role::Merchant => "a merchant (its key; only its own objects)",
            Role::Service => "the order service (a service key)",
            Role::User => "a user (a user token; only their own)",
        })
        .collect();
    let side = |platform: bool| -> Vec<&'static str> {
        OperatorRole::ALL
            .into_iter()
            .filter(|r| r.is_platform() == platform && r.may(area))
            .map(OperatorRole::as_str)
            .collect()
    };
    let mut operators = Vec::new();
    if roles.contains(&Role::Platform) {
        operators.push(format!("platform {}", side(true).join(", ")));
    }
    if roles.contains(&Role::Merchant) {
        operators.push(format!("a merchant's {}", side(false).join(", ")));
    }
    let mut out = format!("**Who may call:** {}.", who.join("; "));
    if !operators.is_empty() {
        out.push_str(&format!(" In the console: {}.", operators.join("; ")));
    }
    out
}

/// The example's error codes, listed in the description and in each status's response.
fn error_codes(op: &mut Operation, e: &Example) -> Option<String> {
    if e.errors.is_empty() {
        return None;
    }
    let mut listed = Vec::new();
    for (status, codes) in &e.errors {
        let names: Vec<String> = codes.iter().map(|c| format!("`{c}`")).collect();
        listed.push(format!("{status}: {}", names.join(", ")));
        let response = op
            .responses
            .responses
            .entry(status.clone())
            .or_insert_with(|| {
                ResponseBuilder::new()
                    .description("Refused")
                    .content(
                        "application/problem+json",
                        ContentBuilder::new()
                            .schema(Some(Ref::from_schema_name("Problem")))
                            .build(),
                    )
                    .build()
                    .into()
            });
        if let RefOr::T(r) = response {
            // The shared text's own examples of codes give way to this operation's codes.
            let base = r.description.split(" (").next().unwrap_or_default();
            r.description = format!("{}: {}", base.trim_end_matches('.'), names.join(", "));
        }
    }
    Some(format!(
        "**Error codes** beyond those of every route: {}.",
        listed.join("; ")
    ))
}

/// Puts the example's body on the request and its recorded answer on the documented status.
fn attach_examples(op: &mut Operation, e: &Example) {
    if let (Some(body), Some(request)) = (&e.body, op.request_body.as_mut()) {
        let wanted = e.content_type.as_deref().unwrap_or("application/json");
        if let Some(content) = request.content.get_mut(wanted) {
            content.example = Some(body.clone());
        }
    }
    let (Some(answer), Some(RefOr::T(response))) = (
        &e.response,
        op.responses.responses.get_mut(&e.status.to_string()),
    ) else {
        return;
    };
    if let Some(content) = response.content.values_mut().next() {
        content.example = Some(answer.clone());
    }
}
