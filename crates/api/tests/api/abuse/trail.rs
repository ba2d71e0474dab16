//! The audit trail's walk (issue 61 point 5): every JSON write route of the OpenAPI document,
//! sent as its fixture from a client address, leaves a new entry naming its caller and that
//! client, unless it is listed in [`ELSEWHERE`] with where its record is kept instead.

use super::body_fixtures::fixtures;
use super::*;

/// Write routes the trail leaves out, and where what they did is recorded instead.
const ELSEWHERE: &[(&str, &str)] = &[
    (
        "POST /v1/templates/{id}/claims",
        "a claim: the coupon's own log and its coupon.claimed event",
    ),
    (
        "POST /v1/codes/{code}/redeem",
        "a claim by code: the coupon's own log and its coupon.claimed event",
    ),
    (
        "POST /v1/orders/{order_id}/refund",
        "a checkout step: each coupon's log names who, the refund its events",
    ),
    (
        "POST /v1/users/{id}/seen",
        "activity, not a change: the user's last-seen time",
    ),
    (
        "POST /v1/orders/{order_id}/lock",
        "a checkout step: each coupon's log names who, the order its events",
    ),
    ("POST /v1/quotes", "a quote changes nothing"),
    (
        "POST /v1/rules/preview",
        "a rule tried on a made-up order changes nothing",
    ),
    (
        "POST /v1/message-texts/{kind}/{locale}/preview",
        "a preview changes nothing",
    ),
];

/// The newest entries of the trail, as the platform reads them.
async fn newest(app: &TestApp) -> Vec<Value> {
    let r = app.get("/v1/audit?limit=200", &app.platform).await;
    r.body["items"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn every_json_write_route_leaves_an_entry_naming_its_caller_and_client() {
    let app = TestApp::new().await;
    let mut fixtures = fixtures(&app).await;
    let client: IpAddr = Ipv4Addr::new(203, 0, 113, 5).into();
    let routes = super::bodies::json_write_routes();
    for (left_out, _) in ELSEWHERE {
        assert!(
            routes
                .iter()
                .any(|(m, r, _)| format!("{m} {r}") == *left_out),
            "{left_out} is no JSON write route any more: drop it from ELSEWHERE"
        );
    }
    let mut missing = vec![];
    for (method, route, _) in routes {
        let name = format!("{method} {route}");
        if ELSEWHERE.iter().any(|(r, _)| *r == name) {
            continue;
        }
        let Some(f) = fixtures.remove(&(method.clone(), route.clone())) else {
            panic!("{name} takes JSON: add a request that succeeds to `fixtures`")
        };
        let before: Vec<i64> = newest(&app)
            .await
            .iter()
            .filter_map(|e| e["id"].as_i64())
            .collect();
        let last = before.iter().copied().max().unwrap_or(0);
        let r = app
            .send(request(
                method,
                &f.path,
                &f.credential,
                Some(client),
                Some(&f.body),
            ))
            .await;
        assert!(r.status.is_success(), "{name}: {}", r.body);
        let named = newest(&app).await.iter().any(|e| {
            e["id"].as_i64().is_some_and(|id| id > last)
                && e["client"] == "203.0.113.5"
                && e["actor"]
                    .as_str()
                    .is_some_and(|a| !a.starts_with("system:"))
        });
        if !named {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "write routes leaving no entry naming their caller and client: {missing:#?}"
    );
}
