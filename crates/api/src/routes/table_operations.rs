//! The second half of the route table: bulk issuance, reports and webhooks, and the order
//! service's checkout with the coupon lookups around it (the first half is in `mod.rs`).

use axum::http::Method;
use axum::routing::{delete, get, post, put};

use super::{
    centre, checkout, claims, coupons, events, issuances, r, refunds, reports, seen, shared_tags,
    tag_uploads, tags, today, webhooks, Route, RouteSpec, PLATFORM, PLATFORM_MERCHANT,
    PLATFORM_MERCHANT_SERVICE, PLATFORM_MERCHANT_USER, PLATFORM_SERVICE, SERVICE, USER_SERVICE,
};

/// Bulk issuance, stats, reconciliation and webhooks.
pub(super) fn operations_routes() -> Vec<Route> {
    vec![
        (
            RouteSpec {
                method: Method::POST,
                path: "/v1/templates/{id}/issuances",
                roles: PLATFORM_MERCHANT,
                upload: true,
            },
            post(issuances::create),
        ),
        r(
            Method::GET,
            "/v1/issuances",
            PLATFORM_MERCHANT,
            get(issuances::list),
        ),
        r(
            Method::GET,
            "/v1/issuances/{id}",
            PLATFORM_MERCHANT,
            get(issuances::get),
        ),
        r(
            Method::GET,
            "/v1/templates/{id}/stats",
            PLATFORM_MERCHANT,
            get(reports::template),
        ),
        r(
            Method::GET,
            "/v1/activities/{id}/stats",
            PLATFORM_MERCHANT,
            get(reports::activity),
        ),
        r(
            Method::GET,
            "/v1/reports/reconciliation",
            PLATFORM,
            get(reports::reconciliation),
        ),
        r(
            Method::GET,
            "/v1/reports/today",
            PLATFORM_MERCHANT,
            get(today::today),
        ),
        r(
            Method::POST,
            "/v1/webhooks",
            PLATFORM_MERCHANT,
            post(webhooks::create),
        ),
        r(
            Method::GET,
            "/v1/webhooks",
            PLATFORM_MERCHANT,
            get(webhooks::list),
        ),
        r(
            Method::GET,
            "/v1/webhooks/{id}",
            PLATFORM_MERCHANT,
            get(webhooks::get),
        ),
        r(
            Method::DELETE,
            "/v1/webhooks/{id}",
            PLATFORM_MERCHANT,
            delete(webhooks::remove),
        ),
        r(
            Method::POST,
            "/v1/webhooks/{id}/disable",
            PLATFORM_MERCHANT,
            post(webhooks::disable),
        ),
        r(
            Method::POST,
            "/v1/webhooks/{id}/ping",
            PLATFORM_MERCHANT,
            post(webhooks::ping),
        ),
        r(
            Method::GET,
            "/v1/webhooks/{id}/deliveries",
            PLATFORM_MERCHANT,
            get(webhooks::deliveries),
        ),
        r(
            Method::GET,
            "/v1/events",
            PLATFORM_MERCHANT,
            get(events::list),
        ),
    ]
}

/// The order service's checkout and the coupon lookups around it.
pub(super) fn checkout_routes() -> Vec<Route> {
    vec![
        r(
            Method::POST,
            "/v1/quotes",
            USER_SERVICE,
            post(checkout::quote),
        ),
        r(
            Method::POST,
            "/v1/orders/{order_id}/lock",
            SERVICE,
            post(checkout::lock),
        ),
        // The order service, and the platform's support (the console's "extend").
        r(
            Method::POST,
            "/v1/orders/{order_id}/extend",
            PLATFORM_SERVICE,
            post(checkout::extend),
        ),
        r(
            Method::POST,
            "/v1/orders/{order_id}/confirm",
            SERVICE,
            post(checkout::confirm),
        ),
        r(
            Method::POST,
            "/v1/orders/{order_id}/cancel",
            SERVICE,
            post(checkout::cancel),
        ),
        r(
            Method::POST,
            "/v1/orders/{order_id}/refund",
            SERVICE,
            post(refunds::refund),
        ),
        r(
            Method::GET,
            "/v1/orders/{order_id}",
            SERVICE,
            get(checkout::get),
        ),
        r(
            Method::POST,
            "/v1/coupons/{id}/revoke",
            PLATFORM_MERCHANT,
            post(coupons::revoke),
        ),
        r(
            Method::GET,
            "/v1/coupons/{id}/history",
            PLATFORM_MERCHANT_USER,
            get(checkout::history),
        ),
        r(
            Method::GET,
            "/v1/users/{id}/coupons",
            PLATFORM_MERCHANT_SERVICE,
            get(claims::of_user),
        ),
        r(
            Method::GET,
            "/v1/users/{id}/claimable",
            PLATFORM_SERVICE,
            get(centre::of_user),
        ),
        r(
            Method::PUT,
            "/v1/users/{id}/tags",
            PLATFORM_SERVICE,
            put(tags::put),
        ),
        r(
            Method::GET,
            "/v1/users/{id}/tags",
            PLATFORM_SERVICE,
            get(tags::get),
        ),
        r(
            Method::POST,
            "/v1/users/{id}/seen",
            PLATFORM_SERVICE,
            post(seen::mark),
        ),
        r(
            Method::GET,
            "/v1/users/{id}/seen",
            PLATFORM_SERVICE,
            get(seen::get),
        ),
        (
            RouteSpec {
                method: Method::POST,
                path: "/v1/user-tags",
                roles: PLATFORM_SERVICE,
                upload: true,
            },
            post(tag_uploads::create),
        ),
        r(
            Method::GET,
            "/v1/user-tags",
            PLATFORM_SERVICE,
            get(tag_uploads::list),
        ),
        r(
            Method::GET,
            "/v1/user-tags/{id}",
            PLATFORM_SERVICE,
            get(tag_uploads::get),
        ),
        r(
            Method::GET,
            "/v1/tags/shared",
            PLATFORM,
            get(shared_tags::list),
        ),
        r(
            Method::PUT,
            "/v1/tags/{tag}/shared",
            PLATFORM,
            put(shared_tags::share),
        ),
        r(
            Method::DELETE,
            "/v1/tags/{tag}/shared",
            PLATFORM,
            delete(shared_tags::unshare),
        ),
    ]
}
