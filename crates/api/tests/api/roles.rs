//! Every route against every role. The expected table lives here, apart from the code: a route
//! added without an entry here fails `table_covers_every_route`.

use std::collections::BTreeSet;

use axum::http::{Method, StatusCode};
use coupond_api::{route_table, Role};
use serde_json::json;

use crate::support::*;

const P: Role = Role::Platform;
const M: Role = Role::Merchant;
const S: Role = Role::Service;
const U: Role = Role::User;

/// (method, path, roles allowed).
fn expected() -> Vec<(Method, &'static str, Vec<Role>)> {
    vec![
        (Method::POST, "/v1/merchants", vec![P]),
        (Method::GET, "/v1/merchants", vec![P]),
        (Method::GET, "/v1/cities", vec![P, M, S, U]),
        (Method::PUT, "/v1/cities/{id}", vec![P]),
        (Method::GET, "/v1/merchants/{id}", vec![P, M]),
        (Method::PATCH, "/v1/merchants/{id}", vec![P]),
        (Method::POST, "/v1/merchants/{id}/keys", vec![P, M]),
        (Method::GET, "/v1/merchants/{id}/keys", vec![P, M]),
        (
            Method::POST,
            "/v1/merchants/{id}/keys/{key_id}/revoke",
            vec![P, M],
        ),
        (
            Method::PUT,
            "/v1/merchants/{id}/keys/{key_id}/owner",
            vec![P],
        ),
        (Method::GET, "/v1/operators", vec![P, M]),
        (Method::GET, "/v1/operators/invitations", vec![P, M]),
        (Method::GET, "/v1/audit", vec![P, M]),
        (Method::GET, "/v1/audits", vec![P]),
        (Method::POST, "/v1/audits", vec![P]),
        (Method::POST, "/v1/operators", vec![P, M]),
        (Method::PATCH, "/v1/operators/{id}", vec![P, M]),
        (Method::POST, "/v1/activities", vec![P]),
        (Method::GET, "/v1/activities", vec![P, M]),
        (Method::GET, "/v1/activities/{id}", vec![P, M]),
        (Method::PATCH, "/v1/activities/{id}", vec![P]),
        (Method::POST, "/v1/activities/{id}/abort", vec![P]),
        (Method::POST, "/v1/activities/{id}/pause", vec![P]),
        (Method::POST, "/v1/activities/{id}/resume", vec![P]),
        (Method::POST, "/v1/templates", vec![P, M]),
        (Method::GET, "/v1/templates", vec![P, M]),
        (Method::GET, "/v1/templates/{id}", vec![P, M]),
        (Method::PATCH, "/v1/templates/{id}", vec![P, M]),
        (Method::POST, "/v1/templates/{id}/publish", vec![P, M]),
        (Method::POST, "/v1/templates/{id}/abort", vec![P, M]),
        (Method::POST, "/v1/templates/{id}/pause", vec![P, M]),
        (Method::POST, "/v1/templates/{id}/resume", vec![P, M]),
        (Method::POST, "/v1/templates/{id}/stop", vec![P, M]),
        (Method::POST, "/v1/templates/{id}/approve", vec![P]),
        (Method::POST, "/v1/templates/{id}/reject", vec![P]),
        (Method::DELETE, "/v1/templates/{id}", vec![P, M]),
        (Method::GET, "/v1/templates/{id}/history", vec![P, M]),
        (Method::GET, "/v1/templates/{id}/coupons", vec![P, M]),
        (Method::DELETE, "/v1/listings/{id}", vec![M]),
        (Method::POST, "/v1/orders/{order_id}/refund", vec![S]),
        (Method::POST, "/v1/coupons/{id}/revoke", vec![P, M]),
        (Method::GET, "/v1/events", vec![P, M]),
        (Method::PUT, "/v1/users/{id}/tags", vec![P, S]),
        (Method::GET, "/v1/users/{id}/tags", vec![P, S]),
        (Method::POST, "/v1/users/{id}/seen", vec![P, S]),
        (Method::GET, "/v1/users/{id}/seen", vec![P, S]),
        (Method::POST, "/v1/user-tags", vec![P, S]),
        (Method::GET, "/v1/user-tags", vec![P, S]),
        (Method::GET, "/v1/user-tags/{id}", vec![P, S]),
        (Method::PUT, "/v1/users/{id}/contact", vec![P, S]),
        (Method::GET, "/v1/users/{id}/contact", vec![P, S]),
        (Method::PUT, "/v1/users/{id}/preferences", vec![P, S]),
        (Method::GET, "/v1/me/preferences", vec![U]),
        (Method::PUT, "/v1/me/preferences", vec![U]),
        (Method::GET, "/v1/message-texts", vec![P]),
        (Method::PUT, "/v1/message-texts/{kind}/{locale}", vec![P]),
        (Method::DELETE, "/v1/message-texts/{kind}/{locale}", vec![P]),
        (
            Method::POST,
            "/v1/message-texts/{kind}/{locale}/preview",
            vec![P],
        ),
        (Method::GET, "/v1/outbound-messages", vec![P]),
        (Method::POST, "/v1/templates/{id}/messages", vec![P, M]),
        (Method::GET, "/v1/templates/{id}/messages", vec![P, M]),
        (Method::GET, "/v1/tags/shared", vec![P]),
        (Method::PUT, "/v1/tags/{tag}/shared", vec![P]),
        (Method::DELETE, "/v1/tags/{tag}/shared", vec![P]),
        (Method::POST, "/v1/listings", vec![M]),
        (Method::GET, "/v1/listings", vec![P, M, S, U]),
        (Method::GET, "/v1/listings/{id}", vec![P, M, S, U]),
        (Method::PATCH, "/v1/listings/{id}", vec![M]),
        (
            Method::PUT,
            "/v1/listings/{id}/templates/{template_id}",
            vec![P, M],
        ),
        (
            Method::DELETE,
            "/v1/listings/{id}/templates/{template_id}",
            vec![P, M],
        ),
        (Method::POST, "/v1/templates/{id}/claims", vec![U, S]),
        (Method::GET, "/v1/me/coupons", vec![U]),
        (Method::GET, "/v1/users/{id}/coupons", vec![P, M, S]),
        (Method::GET, "/v1/me/claimable", vec![U]),
        (Method::GET, "/v1/users/{id}/claimable", vec![P, S]),
        (Method::GET, "/v1/me/templates/{id}", vec![U]),
        (Method::GET, "/v1/me/activities/{id}", vec![U]),
        (Method::PUT, "/v1/templates/{id}/code", vec![P, M]),
        (Method::GET, "/v1/templates/{id}/code", vec![P, M]),
        (Method::DELETE, "/v1/templates/{id}/code", vec![P, M]),
        (Method::POST, "/v1/templates/{id}/codes", vec![P, M]),
        (Method::GET, "/v1/templates/{id}/code-batches", vec![P, M]),
        (Method::GET, "/v1/code-batches/{id}", vec![P, M]),
        (Method::GET, "/v1/code-batches/{id}/codes", vec![P, M]),
        (Method::POST, "/v1/codes/{code}/redeem", vec![U, S]),
        (Method::POST, "/v1/quotes", vec![U, S]),
        (Method::POST, "/v1/rules/preview", vec![P, M]),
        (Method::POST, "/v1/rules", vec![P, M]),
        (Method::GET, "/v1/rules", vec![P, M]),
        (Method::GET, "/v1/rules/{id}", vec![P, M]),
        (Method::PUT, "/v1/rules/{id}", vec![P, M]),
        (Method::DELETE, "/v1/rules/{id}", vec![P, M]),
        (Method::POST, "/v1/orders/{order_id}/lock", vec![S]),
        (Method::POST, "/v1/orders/{order_id}/record", vec![S]),
        (Method::POST, "/v1/orders/{order_id}/extend", vec![P, S]),
        (Method::POST, "/v1/orders/{order_id}/confirm", vec![S]),
        (Method::POST, "/v1/orders/{order_id}/cancel", vec![S]),
        (Method::GET, "/v1/orders/{order_id}", vec![S]),
        (Method::GET, "/v1/coupons/{id}/history", vec![P, M, U]),
        (Method::GET, "/v1/me/messages", vec![U]),
        (Method::POST, "/v1/templates/{id}/issuances", vec![P, M]),
        (Method::GET, "/v1/issuances", vec![P, M]),
        (Method::GET, "/v1/issuances/{id}", vec![P, M]),
        (Method::GET, "/v1/templates/{id}/stats", vec![P, M]),
        (Method::GET, "/v1/activities/{id}/stats", vec![P, M]),
        (Method::GET, "/v1/reports/reconciliation", vec![P]),
        (Method::GET, "/v1/reports/performance", vec![P, M]),
        (Method::GET, "/v1/reports/settlement", vec![P, M]),
        (Method::GET, "/v1/reports/today", vec![P, M]),
        (Method::POST, "/v1/webhooks", vec![P, M]),
        (Method::GET, "/v1/webhooks", vec![P, M]),
        (Method::GET, "/v1/webhooks/{id}", vec![P, M]),
        (Method::DELETE, "/v1/webhooks/{id}", vec![P, M]),
        (Method::POST, "/v1/webhooks/{id}/disable", vec![P, M]),
        (Method::POST, "/v1/webhooks/{id}/ping", vec![P, M]),
        (Method::GET, "/v1/webhooks/{id}/deliveries", vec![P, M]),
        (Method::POST, "/v1/me/messages/{id}/read", vec![U]),
    ]
}

#[test]
fn table_covers_every_route() {
    let actual: BTreeSet<(String, String, Vec<String>)> = route_table()
        .iter()
        .map(|r| {
            let mut roles: Vec<String> = r.roles.iter().map(|r| format!("{r:?}")).collect();
            roles.sort();
            (r.method.to_string(), r.path.to_owned(), roles)
        })
        .collect();
    let wanted: BTreeSet<(String, String, Vec<String>)> = expected()
        .into_iter()
        .map(|(m, p, roles)| {
            let mut roles: Vec<String> = roles.iter().map(|r| format!("{r:?}")).collect();
            roles.sort();
            (m.to_string(), p.to_owned(), roles)
        })
        .collect();
    assert_eq!(
        actual, wanted,
        "route table and the expected role table differ"
    );
}

#[tokio::test]
async fn every_route_admits_exactly_its_roles() {
    let app = TestApp::new().await;
    let activity = app.activity(activity_body(-1, 24, 48, 96)).await;
    let credentials = [
        (Role::Platform, app.platform.clone()),
        (Role::Merchant, app.m1().to_owned()),
        (Role::Service, app.service.clone()),
        (Role::User, app.user.clone()),
    ];
    for (method, path, allowed) in expected() {
        let concrete = path
            .replace("{id}", &activity.to_string())
            .replace("{template_id}", "1")
            .replace("{code}", "SPRING24")
            .replace("{tag}", "vip")
            .replace("{order_id}", "order-1");
        let body = matches!(method, Method::POST | Method::PATCH | Method::PUT).then(|| json!({}));
        let anon = app
            .call(method.clone(), &concrete, None, body.clone())
            .await;
        assert_eq!(
            anon.status,
            StatusCode::UNAUTHORIZED,
            "{method} {path} anonymous"
        );
        assert_eq!(anon.code(), "unauthorized");
        let bad = app
            .call(
                method.clone(),
                &concrete,
                Some("cpd_not-a-key"),
                body.clone(),
            )
            .await;
        assert_eq!(
            bad.status,
            StatusCode::UNAUTHORIZED,
            "{method} {path} unknown key"
        );
        for (role, cred) in &credentials {
            let r = app
                .call(method.clone(), &concrete, Some(cred), body.clone())
                .await;
            if allowed.contains(role) {
                assert!(
                    r.status != StatusCode::UNAUTHORIZED && r.status != StatusCode::FORBIDDEN,
                    "{method} {path} as {role:?} should be admitted, got {} {}",
                    r.status,
                    r.body
                );
                assert!(
                    !r.status.is_server_error(),
                    "{method} {path} as {role:?}: {}",
                    r.body
                );
            } else {
                assert_eq!(
                    r.status,
                    StatusCode::FORBIDDEN,
                    "{method} {path} as {role:?}: {}",
                    r.body
                );
                assert_eq!(r.code(), "forbidden");
            }
        }
    }
}

#[tokio::test]
async fn revoked_keys_and_expired_tokens_are_refused() {
    let app = TestApp::new().await;
    let r = app.get("/v1/activities", &app.platform).await;
    assert_eq!(r.status, StatusCode::OK);
    let key = app
        .store
        .api_key_by_hash(&coupond_api::auth::hash_api_key(&app.platform))
        .await
        .unwrap();
    app.store.revoke_api_key(key.id, t0()).await.unwrap();
    let r = app.get("/v1/activities", &app.platform).await;
    assert_eq!(
        (r.status, r.code()),
        (StatusCode::UNAUTHORIZED, "unauthorized")
    );

    // The user token minted at day zero is valid for a year of the injected clock.
    let token = app.user.clone();
    let r = app.get("/v1/activities", &token).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "valid token, wrong role");
    app.clock.advance(time::Duration::days(366));
    let r = app.get("/v1/activities", &token).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "expired by the clock");
    let forged = coupond_api::JwtKeys::new(b"another-secret-entirely")
        .mint(
            &coupond_domain::UserId::parse("u-1").unwrap(),
            app.clock.now_ts(),
            time::Duration::hours(1),
        )
        .unwrap();
    assert_eq!(
        app.get("/v1/activities", &forged).await.status,
        StatusCode::UNAUTHORIZED
    );
}
