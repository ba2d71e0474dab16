//! Every JSON write route from the OpenAPI document: server-owned fields, wrong types, oversized and deep bodies, page sizes.

use super::body_fixtures::fixtures;
use super::*;

/// The fields a client must never set: the server owns them.
fn server_owned() -> Vec<(&'static str, Value)> {
    vec![
        ("stock", json!(1_000_000)),
        ("status", json!("active")),
        ("merchant_id", json!(2)),
        ("claimed", json!(0)),
    ]
}

/// Routes whose body may legitimately carry one of the server-owned names: (method and path,
/// field, why). A body schema that declares one of them fails the test until it is listed
/// here with its reason.
const LEGITIMATE: &[(&str, &str, &str)] = &[(
    "POST /v1/operators",
    "merchant_id",
    "the platform names the merchant an owner or staff account acts for",
)];

/// Free-form objects (any keys are data): nothing is injected into them.
const FREE_FORM: &[&str] = &["metadata"];

/// The document's write operations that take a JSON body: (method, path, schema).
pub(super) fn json_write_routes() -> Vec<(Method, String, Value)> {
    let doc: Value = serde_json::from_str(&coupond_api::openapi::document_json()).unwrap();
    let schemas = doc["components"]["schemas"].clone();
    let resolve = |s: &Value| -> Value {
        // `{"$ref"}`, or `oneOf: [null, {"$ref"}]` for optional bodies.
        let reference = s["$ref"].as_str().map(str::to_owned).or_else(|| {
            s["oneOf"]
                .as_array()?
                .iter()
                .find_map(|v| v["$ref"].as_str().map(str::to_owned))
        });
        match reference {
            Some(r) => schemas[r.trim_start_matches("#/components/schemas/")].clone(),
            None => s.clone(),
        }
    };
    let mut out = vec![];
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if !matches!(method.as_str(), "post" | "put" | "patch") {
                continue;
            }
            let Some(schema) = op["requestBody"]["content"]["application/json"].get("schema")
            else {
                continue;
            };
            out.push((
                Method::from_bytes(method.to_uppercase().as_bytes()).unwrap(),
                path.clone(),
                resolve(schema),
            ));
        }
    }
    assert!(out.len() >= 14, "{out:?}");
    out
}

/// JSON pointers and API field paths of every object in `v` (the body itself first).
fn objects(v: &Value, pointer: String, path: String, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(map) => {
            out.push((pointer.clone(), path.clone()));
            for (k, v) in map {
                if FREE_FORM.contains(&k.as_str()) {
                    continue;
                }
                let sub = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                objects(v, format!("{pointer}/{k}"), sub, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                objects(v, format!("{pointer}/{i}"), format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn server_owned_fields_are_refused_on_every_json_write_route() {
    let app = TestApp::new().await;
    let mut fixtures = fixtures(&app).await;
    for (method, route, schema) in json_write_routes() {
        let name = format!("{method} {route}");
        let fixture = fixtures
            .remove(&(method.clone(), route.clone()))
            .unwrap_or_else(|| {
                panic!("{name} takes JSON: add a request that succeeds to `fixtures`")
            });
        let legitimate: Vec<&str> = LEGITIMATE
            .iter()
            .filter(|(r, _, _)| *r == name)
            .map(|(_, field, _)| *field)
            .collect();
        let declared = schema["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        for (field, _) in server_owned() {
            assert!(
                !declared.contains_key(field) || legitimate.contains(&field),
                "{name}: its body declares `{field}`; if clients may set it, list it in \
                 LEGITIMATE with the reason"
            );
        }
        let send = |body: Value| {
            let (path, credential) = (fixture.path.clone(), fixture.credential.clone());
            let app = &app;
            let method = method.clone();
            async move {
                app.send(request(method, &path, &credential, None, Some(&body)))
                    .await
            }
        };
        let before = dump(&app).await;
        let mut places = vec![];
        objects(&fixture.body, String::new(), String::new(), &mut places);
        for (field, value) in server_owned() {
            if legitimate.contains(&field) {
                continue;
            }
            for (pointer, path) in &places {
                let mut body = fixture.body.clone();
                let target = body.pointer_mut(pointer).unwrap().as_object_mut().unwrap();
                if target.contains_key(field) {
                    // The line's own `merchant_id` (an order line names its merchant).
                    continue;
                }
                target.insert(field.to_owned(), value.clone());
                let expected = if path.is_empty() {
                    field.to_owned()
                } else {
                    format!("{path}.{field}")
                };
                let r = send(body).await;
                assert_problem(
                    &r,
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "unknown_field",
                    Some(&expected),
                    &name,
                );
            }
        }
        // A body of nothing but server-owned fields.
        let only: serde_json::Map<String, Value> = server_owned()
            .into_iter()
            .filter(|(f, _)| !legitimate.contains(f))
            .map(|(f, v)| (f.to_owned(), v))
            .collect();
        let r = send(Value::Object(only.clone())).await;
        assert_eq!(
            (r.status, r.code()),
            (StatusCode::UNPROCESSABLE_ENTITY, "unknown_field"),
            "{name}: {}",
            r.body
        );
        assert!(
            only.contains_key(r.body["field"].as_str().unwrap_or("")),
            "{name}: {}",
            r.body
        );
        assert_unchanged(&before, &dump(&app).await, &name);
        // The same request without them succeeds: the fields alone were refused.
        let r = send(fixture.body.clone()).await;
        assert!(
            r.status.is_success(),
            "{name}: the fixture fails: {}",
            r.body
        );
    }
    assert!(
        fixtures.is_empty(),
        "fixtures for routes the document no longer has: {:?}",
        fixtures.keys().collect::<Vec<_>>()
    );
}

// ---------------------------------------------------------------------------------------------
// Oversized bodies, deep JSON, page sizes

/// A value of the wrong type where an enum's name belongs is the field's fault (422 naming
/// it), not bad JSON: serde_json calls some of these syntax errors.
#[tokio::test]
async fn wrong_types_for_named_values_name_the_field() {
    let app = TestApp::new().await;
    let before = dump(&app).await;
    for (field, value) in [
        ("funded_by", json!(5)),
        ("funded_by", json!([[["platform"]]])),
        ("kind", json!(["amount_off"])),
        ("kind", json!(null)),
    ] {
        let mut body = activity_body(-1, 24, 48, 96);
        body[field] = value.clone();
        let r = app.post("/v1/activities", &app.platform, body).await;
        assert_problem(
            &r,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_field",
            Some(field),
            &format!("{field}: {value}"),
        );
    }
    let mut body = standalone_template(10, 20);
    body["stacking"] = json!(1);
    let r = app.post("/v1/templates", app.m1(), body).await;
    assert_problem(
        &r,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_field",
        Some("stacking"),
        "stacking",
    );
    // A document that is not JSON is still malformed.
    let r = app
        .send(raw(
            Method::POST,
            "/v1/activities",
            &app.platform,
            "application/json",
            Body::from("{\"title\": \"x\", \"funded_by\": 5"),
        ))
        .await;
    assert_problem(
        &r,
        StatusCode::BAD_REQUEST,
        "invalid_json",
        None,
        "cut short",
    );
    assert_unchanged(&before, &dump(&app).await, "wrong types");
}

/// Small limits, so that "larger than the limit" is cheap to send on the upload route too.
fn small_limits() -> AppSettings {
    AppSettings {
        max_body_bytes: 16 * 1024,
        max_upload_bytes: 256 * 1024,
        ..Default::default()
    }
}

#[tokio::test]
async fn oversized_and_deep_bodies_are_refused_on_every_json_write_route() {
    let settings = small_limits();
    let (body_limit, upload_limit) = (settings.max_body_bytes, settings.max_upload_bytes);
    let app = TestApp::with_settings(Backend::Sqlite, settings)
        .await
        .unwrap();
    let fixtures = fixtures(&app).await;
    let uploads: Vec<String> = coupond_api::route_table()
        .iter()
        .filter(|r| r.upload)
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    let before = dump(&app).await;
    for (method, route, _) in json_write_routes() {
        let name = format!("{method} {route}");
        let fixture = &fixtures[&(method.clone(), route.clone())];
        let limit = if uploads.contains(&name) {
            upload_limit
        } else {
            body_limit
        };
        let send = |body: Body| {
            app.send(raw(
                method.clone(),
                &fixture.path,
                &fixture.credential,
                "application/json",
                body,
            ))
        };
        // One byte over the limit, as valid JSON; and the same streamed without a length.
        let mut big = fixture.body.clone();
        let text = big.to_string();
        big["padding"] = json!("x".repeat(limit + 1 - text.len()));
        let r = send(Body::from(big.to_string())).await;
        assert_problem(
            &r,
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            None,
            &name,
        );
        let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = big
            .to_string()
            .into_bytes()
            .chunks(4096)
            .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
            .collect();
        let r = send(Body::from_stream(futures_util::stream::iter(chunks))).await;
        assert_problem(
            &r,
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            None,
            &format!("{name}, streamed"),
        );
        // Nesting deeper than the parser goes, under every field of the body and under an
        // unknown one: arrays and objects, closed and left open, as deep as the limit lets
        // them be; and 100,000 levels (over the limit, except on the upload route).
        let mut keys: Vec<String> = fixture.body.as_object().unwrap().keys().cloned().collect();
        keys.push("unknown".to_owned());
        for key in keys {
            let mut holder = fixture.body.clone();
            holder[&key] = json!("DEEP");
            let around = holder.to_string();
            let room = limit - around.len();
            let depth = room / 6;
            for (shape, deep) in [
                (
                    "arrays",
                    format!("{}{}", "[".repeat(room / 2), "]".repeat(room / 2)),
                ),
                ("open arrays", "[".repeat(room)),
                (
                    "objects",
                    format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth)),
                ),
                ("100,000 levels", "[".repeat(100_000)),
            ] {
                let body = around.replace("\"DEEP\"", &deep);
                let what = format!("{name}, {shape} under `{key}`");
                let r = send(Body::from(body.clone())).await;
                if body.len() > limit {
                    assert_problem(
                        &r,
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "payload_too_large",
                        None,
                        &what,
                    );
                } else {
                    assert_deep_refused(&r, &key, &what);
                }
            }
        }
    }
    assert_unchanged(&before, &dump(&app).await, "oversized and deep bodies");
    assert!(!uploads.is_empty());
}

/// The answer to nesting too deep under `key`: an unknown key is refused before its value is
/// read, a typed field at the first bracket or key it did not expect (422 naming the field);
/// a value the parser must read whole (free-form metadata, a tagged enum's fields before its
/// tag) stops at the parser's depth limit, and a document that is not JSON is 400
/// `invalid_json`. Never a 5xx, never a crash.
fn assert_deep_refused(r: &Reply, key: &str, what: &str) {
    assert_eq!(
        r.headers[header::CONTENT_TYPE],
        "application/problem+json",
        "{what}"
    );
    let field = r.body["field"].as_str().unwrap_or_default();
    let under = field == key
        || field.starts_with(&format!("{key}."))
        || field.starts_with(&format!("{key}["));
    match (r.status, r.code()) {
        (StatusCode::UNPROCESSABLE_ENTITY, "unknown_field" | "invalid_field") => {
            assert!(under, "{what}: {}", r.body)
        }
        (StatusCode::BAD_REQUEST, "invalid_json") => assert_eq!(field, "", "{what}"),
        _ => panic!("{what}: {} {}", r.status, r.body),
    }
}

/// The document's list routes (those taking `limit`), with a path and a credential for each.
#[tokio::test]
async fn page_sizes_are_bounded_on_every_list_route() {
    let app = TestApp::new().await;
    let template = live(&app, 10, 5, json!({})).await;
    claim(&app, template, "u-1").await;
    let r = app
        .post(
            "/v1/webhooks",
            app.m1(),
            json!({"url": "http://93.184.216.34/hook", "event_types": ["*"]}),
        )
        .await;
    let webhook = r.body["id"].as_i64().unwrap();
    let paths = BTreeMap::from([
        ("/v1/users/{id}/coupons", "/v1/users/u-1/coupons".to_owned()),
        (
            "/v1/users/{id}/claimable",
            "/v1/users/u-1/claimable".to_owned(),
        ),
        (
            "/v1/webhooks/{id}/deliveries",
            format!("/v1/webhooks/{webhook}/deliveries"),
        ),
        (
            "/v1/templates/{id}/code-batches",
            format!("/v1/templates/{template}/code-batches"),
        ),
        (
            "/v1/templates/{id}/messages",
            format!("/v1/templates/{template}/messages"),
        ),
        (
            "/v1/templates/{id}/coupons",
            format!("/v1/templates/{template}/coupons"),
        ),
        (
            "/v1/templates/{id}/history",
            format!("/v1/templates/{template}/history"),
        ),
        // A required filter.
        (
            "/v1/issuances",
            format!("/v1/issuances?template_id={template}"),
        ),
    ]);
    let doc: Value = serde_json::from_str(&coupond_api::openapi::document_json()).unwrap();
    let table = coupond_api::route_table();
    let mut lists = 0;
    for (route, item) in doc["paths"].as_object().unwrap() {
        let Some(op) = item.get("get") else { continue };
        let takes_limit = op["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|p| p["name"] == "limit" && p["in"] == "query");
        if !takes_limit {
            continue;
        }
        lists += 1;
        let documented = op["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "limit")
            .unwrap()["schema"]
            .clone();
        assert_eq!(
            (&documented["minimum"], &documented["maximum"]),
            (&json!(1), &json!(200)),
            "{route}"
        );
        let path = match paths.get(route.as_str()) {
            Some(concrete) => concrete.clone(),
            None if route.contains('{') => panic!("{route}: add a concrete path to `paths`"),
            None => route.clone(),
        };
        let path = if path.contains('?') {
            format!("{path}&")
        } else {
            format!("{path}?")
        };
        let spec = table
            .iter()
            .find(|r| r.method == Method::GET && r.path == *route)
            .unwrap();
        let credential = match spec.roles[0] {
            coupond_api::Role::Platform => app.platform.clone(),
            coupond_api::Role::Merchant => app.m1().to_owned(),
            coupond_api::Role::Service => app.service.clone(),
            coupond_api::Role::User => app.user.clone(),
        };
        for limit in [
            "1000000",
            "-1",
            "1e9",
            "0",
            "201",
            "4294967296",
            "99999999999999999999",
            "1.5",
            "abc",
            "",
            "%20",
        ] {
            let r = app.get(&format!("{path}limit={limit}"), &credential).await;
            assert_problem(
                &r,
                StatusCode::BAD_REQUEST,
                "invalid_query",
                Some("limit"),
                &format!("{route}?limit={limit}"),
            );
        }
        for limit in [1, 200] {
            let r = app.get(&format!("{path}limit={limit}"), &credential).await;
            assert_eq!(
                r.status,
                StatusCode::OK,
                "{route}?limit={limit}: {}",
                r.body
            );
            assert!(r.body["items"].as_array().unwrap().len() <= limit);
        }
        let forged = base64_cursor("id:-5");
        for cursor in ["bogus", forged.as_str(), &"A".repeat(10_000)] {
            let r = app
                .get(&format!("{path}cursor={cursor}"), &credential)
                .await;
            assert_problem(
                &r,
                StatusCode::BAD_REQUEST,
                "invalid_query",
                Some("cursor"),
                route,
            );
        }
    }
    assert!(lists >= 7, "{lists} list routes");
}

fn base64_cursor(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text)
}
