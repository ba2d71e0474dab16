//! Operators' roles, route by route: an operator account (as the console calls the API, with
//! `auth::Caller::Operator`) is admitted to a route exactly when its side (platform or
//! merchant) is in the route's roles and its role may act in the route's area: everyone
//! reads; `marketing` runs campaigns; `support` revokes coupons; `finance` only reads;
//! merchant `staff` does all but manage people and webhooks; `admin` and `owner` do all.
//! A disabled account is refused everywhere.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use coupond_api::auth::Caller;
use coupond_api::routes::{area_of, route_table};
use coupond_api::Role;
use coupond_domain::{Area, Email, OperatorDraft, OperatorId, OperatorRole};
use coupond_engine::accounts::Accounts;
use serde_json::json;

use crate::support::*;

async fn as_operator(app: &TestApp, id: OperatorId, method: &Method, path: &str) -> StatusCode {
    let body = matches!(*method, Method::POST | Method::PATCH | Method::PUT).then(|| json!({}));
    let req = Request::builder()
        .method(method.clone())
        .uri(path)
        .extension(Caller::Operator(id))
        .header(header::CONTENT_TYPE, "application/json");
    let req = req
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
        .unwrap();
    app.send(req).await.status
}

#[test]
fn areas_are_what_the_roles_promise() {
    let area = |m: Method, p: &str| area_of(&m, p);
    assert_eq!(area(Method::GET, "/v1/templates"), Area::Read);
    assert_eq!(area(Method::GET, "/v1/reports/reconciliation"), Area::Read);
    assert_eq!(area(Method::GET, "/v1/operators"), Area::Admin);
    assert_eq!(area(Method::GET, "/v1/merchants/{id}/keys"), Area::Admin);
    assert_eq!(area(Method::POST, "/v1/templates"), Area::Campaigns);
    assert_eq!(
        area(Method::POST, "/v1/templates/{id}/issuances"),
        Area::Campaigns
    );
    assert_eq!(area(Method::POST, "/v1/coupons/{id}/revoke"), Area::Support);
    assert_eq!(
        area(Method::POST, "/v1/templates/{id}/approve"),
        Area::Campaigns
    );
    assert_eq!(area(Method::POST, "/v1/merchants"), Area::Admin);
    assert_eq!(area(Method::POST, "/v1/webhooks"), Area::Admin);
    assert_eq!(area(Method::PUT, "/v1/tags/{tag}/shared"), Area::Admin);
}

/// The areas the application declares with its operations (`coupond_app::Access`) are the
/// ones the rule above gives their routes: moving an operation into the application changes
/// no operator's rights.
#[test]
fn declared_areas_agree_with_the_rule() {
    let differ: Vec<String> = route_table()
        .iter()
        .filter(|r| r.area != area_of(&r.method, &r.path))
        .map(|r| format!("{} {}: {:?}", r.method, r.path, r.area))
        .collect();
    assert!(differ.is_empty(), "{differ:#?}");
}

#[tokio::test]
async fn each_role_is_admitted_exactly_where_it_may_act() {
    let app = TestApp::new().await;
    let activity = app.activity(activity_body(-1, 24, 48, 96)).await;
    let accounts = Accounts::new(app.store.clone(), Arc::new(app.clock.clone()));
    let mut people = vec![];
    for role in OperatorRole::ALL {
        let merchant = (!role.is_platform()).then_some(app.merchants[0].0);
        let email = Email::parse(&format!("{}@example.com", role.as_str())).unwrap();
        let draft = OperatorDraft::new(email, "X".into(), role, merchant).unwrap();
        people.push((role, accounts.add(&draft, None).await.unwrap().id));
    }
    for spec in route_table() {
        let area = spec.area;
        let concrete = spec
            .path
            .replace("{id}", &activity.to_string())
            .replace("{key_id}", "1")
            .replace("{template_id}", "1")
            .replace("{code}", "SPRING24")
            .replace("{tag}", "vip")
            .replace("{order_id}", "order-1");
        for (role, id) in &people {
            let side = if role.is_platform() {
                Role::Platform
            } else {
                Role::Merchant
            };
            let status = as_operator(&app, *id, &spec.method, &concrete).await;
            let (method, path) = (&spec.method, spec.path.as_str());
            if spec.roles.contains(&side) && role.may(area) {
                assert!(
                    status != StatusCode::FORBIDDEN && !status.is_server_error(),
                    "{method} {path} as {role} ({area:?}) should be admitted, got {status}"
                );
            } else {
                assert_eq!(
                    status,
                    StatusCode::FORBIDDEN,
                    "{method} {path} as {role} ({area:?})"
                );
            }
        }
    }
    let (_, admin) = people[0];
    accounts.set_disabled(admin, true).await.unwrap();
    let status = as_operator(&app, admin, &Method::GET, "/v1/templates").await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "a disabled account was admitted"
    );
}
