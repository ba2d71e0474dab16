//! Abuse cases (issue 6, item 10), each a test. Cases covered elsewhere are listed here so that
//! the whole list can be read in one place:
//!
//! - wrong codes, a few, per user (429 with Retry-After, failures count):
//!   `codes::redemptions_are_rate_limited_and_failures_count`; uniform refusals for used,
//!   mistyped, unknown, garbage and ended codes:
//!   `codes::generated_codes_are_single_use_and_refusals_reveal_nothing`. Here: 10,000 of them
//!   from one user, from many users behind one address, and from many users on many addresses.
//! - one user claiming many times at once: `claims::flash_sale_is_exact_on_sqlite` (through the
//!   service key). Here: with the user's own token from many addresses, and the per-user claim
//!   rate across addresses.
//! - two exclusive coupons: `checkout::a_lease_with_every_kind_on_sqlite` (one pair, one
//!   order). Here: every pairing with exclusives, in both orders.
//! - replaying a confirm: `checkout::a_lease_with_every_kind_on_sqlite` (sequentially). Here:
//!   concurrently, with the discount counted once.
//! - confirming another order's lock: here.
//! - templates outside their activity: `validation::templates_outside_their_activity_are_refused`
//!   (create). Here: the same through PATCH. Binding foreign templates:
//!   `listings::merchants_cannot_touch_each_others_listings_or_bind_foreign_templates`. Here: a
//!   merchant binding its own template to another merchant's listing.
//! - mass assignment: `validation::unknown_fields_and_mass_assignment_are_refused` (templates,
//!   activities). Here: every JSON write route of the OpenAPI document.
//! - oversized and deep bodies: `validation::malformed_oversized_and_mistyped_bodies_are_refused`
//!   (one route). Here: every JSON write route, the upload route's larger limit included. Page
//!   sizes: `flows::lists_page_with_cursors` (one value, one route). Here: every list route.
//!
//! "Nothing changed" is checked on the SQLite file itself: every row of every table, before and
//! after.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration as StdDuration, Instant};

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, Method, Request, StatusCode};
use coupond_api::ratelimit::Rate;
use coupond_api::{AppSettings, JwtKeys};
use coupond_domain::codes::{with_check, ALPHABET};
use coupond_domain::{TemplateId, UserId};
use serde_json::{json, Value};
use sqlx::Connection;

use crate::claims::live;
use crate::support::*;

mod bodies;
mod body_fixtures;
mod checkout;
mod codes;
mod connections;
mod merchants;
mod redis_down;
mod trail;

// ---------------------------------------------------------------------------------------------
// Helpers

/// Every row of every table of the SQLite database as text, sorted: two equal dumps mean that
/// nothing was written in between.
async fn dump(app: &TestApp) -> Vec<String> {
    let path = app
        .sqlite_path()
        .expect("these checks read the SQLite file");
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&path)
        .read_only(true);
    let mut conn = sqlx::SqliteConnection::connect_with(&options)
        .await
        .unwrap();
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
         ORDER BY name",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert!(tables.len() > 10, "{tables:?}");
    let mut rows = vec![];
    for table in tables {
        let columns: Vec<String> = sqlx::query_scalar("SELECT name FROM pragma_table_info(?1)")
            .bind(&table)
            .fetch_all(&mut conn)
            .await
            .unwrap();
        let row = columns
            .iter()
            .map(|c| format!("quote(\"{c}\")"))
            .collect::<Vec<_>>()
            .join(" || ',' || ");
        let sql = format!("SELECT {row} FROM \"{table}\"");
        let mut these: Vec<String> = sqlx::query_scalar(&sql).fetch_all(&mut conn).await.unwrap();
        these.sort();
        rows.extend(these.into_iter().map(|r| format!("{table}: {r}")));
    }
    conn.close().await.unwrap();
    rows
}

/// Fails with the rows that differ, if any.
fn assert_unchanged(before: &[String], after: &[String], what: &str) {
    if before != after {
        let gone: Vec<&String> = before.iter().filter(|r| !after.contains(r)).collect();
        let new: Vec<&String> = after.iter().filter(|r| !before.contains(r)).collect();
        panic!("{what} changed the database:\n  removed: {gone:#?}\n  added: {new:#?}");
    }
}

fn token(app: &TestApp, user: &str) -> String {
    JwtKeys::new(SECRET)
        .mint(
            &UserId::parse(user).unwrap(),
            app.clock.now_ts(),
            time::Duration::hours(1),
        )
        .unwrap()
}

/// The `n`-th client address (as `serve` sees it through `ConnectInfo`).
fn address(n: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + n))
}

/// A request as `credential`, from `ip` when given, with an optional JSON body.
fn request(
    method: Method,
    path: &str,
    credential: &str,
    ip: Option<IpAddr>,
    body: Option<&Value>,
) -> Request<Body> {
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header(header::AUTHORIZATION, format!("Bearer {credential}"));
    let mut req = match body {
        Some(b) => req
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(b.to_string()))
            .unwrap(),
        None => req.body(Body::empty()).unwrap(),
    };
    if let Some(ip) = ip {
        req.extensions_mut()
            .insert(ConnectInfo(SocketAddr::new(ip, 40_000)));
    }
    req
}

/// A raw body with a content type, as `credential`.
fn raw(
    method: Method,
    path: &str,
    credential: &str,
    content_type: &str,
    body: Body,
) -> Request<Body> {
    Request::builder()
        .method(method)
        .uri(path)
        .header(header::AUTHORIZATION, format!("Bearer {credential}"))
        .header(header::CONTENT_TYPE, content_type)
        .body(body)
        .unwrap()
}

/// The most requests a limiter of `rate` admits for one key over `elapsed`: its burst, what
/// refills meanwhile (rounded up), and one for the instant the count starts.
fn admitted_at_most(rate: Rate, elapsed: StdDuration) -> usize {
    rate.burst as usize + (elapsed.as_secs_f64() * f64::from(rate.per_second)).ceil() as usize + 1
}

/// The rates `coupond serve` runs with by default (README, Configuration): the ones an
/// attacker meets.
fn serve_limits() -> AppSettings {
    AppSettings {
        claim_rate_per_user: Rate {
            per_second: 5,
            burst: 10,
        },
        claim_rate_per_ip: Rate {
            per_second: 50,
            burst: 100,
        },
        redeem_rate_per_user: Rate {
            per_second: 1,
            burst: 5,
        },
        redeem_rate_per_ip: Rate {
            per_second: 10,
            burst: 50,
        },
        ..Default::default()
    }
}

/// Asserts a problem answer: status, content type, `code` and `field`.
fn assert_problem(r: &Reply, status: StatusCode, code: &str, field: Option<&str>, what: &str) {
    assert_eq!(
        (r.status, r.code(), r.body["field"].as_str()),
        (status, code, field),
        "{what}: {}",
        r.body
    );
    assert_eq!(
        r.headers[header::CONTENT_TYPE],
        "application/problem+json",
        "{what}"
    );
}

// ---------------------------------------------------------------------------------------------
// Orders and coupons, for the checkout cases and the write routes

/// An order of 3000.00 for `user` in city 1 (one item line of merchant 1).
fn order(app: &TestApp, user: &str) -> Value {
    json!({
        "user_id": user,
        "city_id": 1,
        "lines": [{"product_id": "p-1", "merchant_id": app.merchants[0].0.get(),
                   "category_id": 1, "unit_price": 300000, "quantity": 1, "kind": "item"}]
    })
}

/// A live template of merchant 1 worth `amount` off, with `stacking`.
async fn worth(app: &TestApp, amount: i64, stacking: &str) -> i64 {
    live(
        app,
        10,
        5,
        json!({"value": {"kind": "amount_off", "amount": amount}, "stacking": stacking}),
    )
    .await
}

async fn claim(app: &TestApp, template: i64, user: &str) -> i64 {
    let r = app
        .send(request(
            Method::POST,
            &format!("/v1/templates/{template}/claims"),
            &token(app, user),
            None,
            None,
        ))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    r.body["id"].as_i64().unwrap()
}

async fn lock(app: &TestApp, order_id: &str, user: &str, coupons: &[i64]) -> Reply {
    app.post(
        &format!("/v1/orders/{order_id}/lock"),
        &app.service,
        json!({"order": order(app, user), "coupon_ids": coupons}),
    )
    .await
}

async fn step(app: &TestApp, order_id: &str, action: &str) -> Reply {
    app.send(request(
        Method::POST,
        &format!("/v1/orders/{order_id}/{action}"),
        &app.service,
        None,
        None,
    ))
    .await
}

/// A coupon's status as its holder's wallet shows it.
async fn status_of(app: &TestApp, coupon: i64, user: &str) -> String {
    let r = app.get("/v1/me/coupons?limit=200", &token(app, user)).await;
    r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == coupon)
        .map(|c| c["status"].as_str().unwrap().to_owned())
        .unwrap_or_else(|| panic!("coupon {coupon} not in {user}'s wallet"))
}
