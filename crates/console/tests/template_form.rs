//! The template pages show what the API has and take what it takes: a template's page lists
//! its threshold, cities, per-user limit, stacking, audience, refund policy, its activity and
//! its change history; an activity's page its description and funding; the "new template"
//! form creates a buy-X-get-Y template with a budget, stacking, an audience and a refund
//! policy, and a percent off with a cap; a draft's Edit form changes it through the API, a
//! refusal kept at its field with what was typed.

mod support;

use axum::http::{Method, StatusCode};
use coupond_api::AppSettings;
use coupond_store::Role;
use serde_json::json;

use support::{
    answer, app_with_settings, csrf_of, form_post, key, merchant, page_get, sign_in_cookie,
    template_body, v1, App,
};

/// The text of the element with `id`, up to its first `</tag>`.
fn element<'a>(page: &'a str, id: &str, tag: &str) -> &'a str {
    let start = page
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in {page}"));
    let end = page[start..].find(&format!("</{tag}>")).unwrap();
    &page[start..start + end]
}

async fn get(app: &App, cookie: &str, path: &str) -> String {
    let a = answer(app, page_get(path, cookie)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    a.body
}

/// Posts `fields` (with the page's token) to `path`; the answer.
async fn post(
    app: &App,
    cookie: &str,
    path: &str,
    page: &str,
    fields: &[(&str, &str)],
) -> support::Answer {
    let mut form = format!("csrf={}", csrf_of(page));
    for (k, v) in fields {
        form.push_str(&format!("&{k}={}", urlencode(v)));
    }
    answer(app, form_post(path, Some(cookie), form)).await
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The form's fields for a standalone template, claimable from 13:00 to the 30th.
fn standalone<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut f = vec![
        ("title", "Two for one"),
        ("cities", "1"),
        ("total_stock", "50"),
        ("per_user_limit", "2"),
        ("validity", "relative"),
        ("validity_days", "30"),
        ("claim_start", "2026-11-24T13:00"),
        ("claim_end", "2026-11-30T00:00"),
    ];
    f.extend_from_slice(extra);
    f
}

#[tokio::test]
async fn the_form_takes_every_term_the_api_takes() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let cookie = sign_in_cookie(&app, &mkey).await;
    let form = get(&app, &cookie, "/console/templates/new").await;
    for field in [
        "buy",
        "get",
        "max_applications",
        "cap",
        "budget",
        "stacking",
        "audience",
        "audience_list",
        "refund_policy",
    ] {
        assert!(form.contains(&format!("name=\"{field}\"")), "{field}");
    }
    assert!(form.contains("<option value=\"buy_x_get_y\""));
    let fields = standalone(&[
        ("kind", "buy_x_get_y"),
        ("buy", "2"),
        ("get", "1"),
        ("max_applications", "3"),
        ("budget", "250"),
        ("stacking", "stackable"),
        ("audience", "users"),
        ("audience_list", "u-1, u-2"),
        ("refund_policy", "void"),
    ]);
    let a = post(&app, &cookie, "/console/templates", &form, &fields).await;
    assert_eq!(a.status, StatusCode::SEE_OTHER, "{}", a.body);
    let id: i64 = a.location.rsplit('/').next().unwrap().parse().unwrap();
    let (_, t) = v1(
        &app,
        &mkey,
        Method::GET,
        &format!("/v1/templates/{id}"),
        json!({}),
    )
    .await;
    assert_eq!(
        t["value"],
        json!({"kind": "buy_x_get_y", "buy": 2, "get": 1, "gift": {"type": "cheapest"}, "max_applications": 3})
    );
    assert_eq!(
        (
            &t["budget"],
            &t["stacking"],
            &t["refund_policy"],
            &t["per_user_limit"]
        ),
        (
            &json!(25_000),
            &json!("stackable"),
            &json!("void"),
            &json!(2)
        )
    );
    assert_eq!(
        t["audience"],
        json!({"type": "users", "ids": ["u-1", "u-2"]})
    );

    // A percent off with a cap; a cap that is not a number is named at its field.
    let capped = standalone(&[("kind", "percent_off"), ("value", "15"), ("cap", "40")]);
    let a = post(&app, &cookie, "/console/templates", &form, &capped).await;
    assert_eq!(a.status, StatusCode::SEE_OTHER, "{}", a.body);
    let id: i64 = a.location.rsplit('/').next().unwrap().parse().unwrap();
    let (_, t) = v1(
        &app,
        &mkey,
        Method::GET,
        &format!("/v1/templates/{id}"),
        json!({}),
    )
    .await;
    assert_eq!(
        t["value"],
        json!({"kind": "percent_off", "bps": 1500, "cap": 4000})
    );
    let bad = standalone(&[("kind", "percent_off"), ("value", "15"), ("cap", "forty")]);
    let a = post(&app, &cookie, "/console/templates", &form, &bad).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(a.body.contains("data-field=\"cap\""), "{}", a.body);
    assert!(a.body.contains("value=\"forty\""), "what was typed is kept");

    // A term read from several inputs is named where the form shows its message: a tag that
    // is not one at the audience, an end before the start at the claim window.
    let tags = standalone(&[
        ("kind", "amount_off"),
        ("value", "10"),
        ("audience", "tags"),
        ("audience_list", "vip, not a tag!"),
    ]);
    let a = post(&app, &cookie, "/console/templates", &form, &tags).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(a.body.contains("data-field=\"audience\""), "{}", a.body);
    let mut backwards = standalone(&[("kind", "amount_off"), ("value", "10")]);
    backwards.retain(|(k, _)| *k != "claim_end");
    backwards.push(("claim_end", "2026-11-20T00:00"));
    let a = post(&app, &cookie, "/console/templates", &form, &backwards).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(a.body.contains("data-field=\"claim_window\""), "{}", a.body);
}

#[tokio::test]
async fn a_template_page_shows_its_terms_and_changes() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let mut body = template_body("Spring", 10, "2026-12-31T00:00:00Z");
    body["description"] = json!("For the spring move");
    body["audience"] = json!({"type": "users", "ids": ["u-1", "u-2"]});
    body["reminder_days_before"] = json!(2);
    body["reference"] = json!({"source": "crm", "type": "spring", "external_id": "CRM-7"});
    let (status, t) = v1(&app, &mkey, Method::POST, "/v1/templates", body).await;
    assert_eq!(status, StatusCode::CREATED, "{t}");
    let id = t["id"].as_i64().unwrap();
    let patch = json!({"total_stock": 25});
    let path = format!("/v1/templates/{id}");
    let (status, _) = v1(&app, &mkey, Method::PATCH, &path, patch).await;
    assert_eq!(status, StatusCode::OK);
    let cookie = sign_in_cookie(&app, &mkey).await;
    let page = get(&app, &cookie, &format!("/console/templates/{id}")).await;
    let fact = |id: &str| {
        element(&page, id, "dd")
            .split('>')
            .nth(1)
            .unwrap()
            .to_owned()
    };
    assert_eq!(fact("fact-threshold"), "orders of 100.00 or more");
    assert_eq!(fact("fact-cities"), "city 1");
    assert_eq!(fact("fact-per-user"), "at most 1 coupon");
    assert_eq!(
        fact("fact-stacking"),
        "stackable with other stackable coupons"
    );
    assert_eq!(fact("fact-audience"), "only 2 users: u-1, u-2");
    assert_eq!(fact("fact-refund"), "the coupon goes back to its holder");
    assert_eq!(fact("fact-description"), "For the spring move");
    assert_eq!(fact("fact-reminder"), "2 days before a coupon expires");
    assert_eq!(fact("fact-reference"), "CRM-7 (spring, from crm)");
    let changes = element(&page, "changes", "table");
    assert!(changes.contains("<b>total_stock</b>: 10 → 25"), "{changes}");
    assert!(
        changes.contains(&format!("merchant:{}", m.get())),
        "{changes}"
    );
}

#[tokio::test]
async fn an_activity_page_shows_its_description_and_funding() {
    let app = app_with_settings(AppSettings::default()).await;
    let (platform, _) = key(&app, Role::Platform, None).await;
    let body = json!({
        "title": "Winter move", "description": "Half the deposit for movers in December",
        "cities": [1], "kind": "amount_off", "value_min": 1000, "value_max": 5000,
        "enrollment": {"start": "2026-11-25T00:00:00Z", "end": "2026-11-28T00:00:00Z"},
        "run": {"start": "2026-12-01T00:00:00Z", "end": "2026-12-31T00:00:00Z"},
        "funded_by": "merchant"
    });
    let (status, a) = v1(&app, &platform, Method::POST, "/v1/activities", body).await;
    assert_eq!(status, StatusCode::CREATED, "{a}");
    let cookie = sign_in_cookie(&app, &platform).await;
    let page = get(&app, &cookie, &format!("/console/activities/{}", a["id"])).await;
    assert!(element(&page, "description", "p").contains("Half the deposit for movers in December"));
    assert!(element(&page, "funding", "dd").contains("each merchant pays its own templates"));
}

#[tokio::test]
async fn a_draft_is_edited_from_its_page() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let body = template_body("Spring", 10, "2026-12-31T00:00:00Z");
    let (_, t) = v1(&app, &mkey, Method::POST, "/v1/templates", body).await;
    let id = t["id"].as_i64().unwrap();
    let cookie = sign_in_cookie(&app, &mkey).await;
    let page = get(&app, &cookie, &format!("/console/templates/{id}")).await;
    assert!(
        page.contains(&format!("href=\"/console/templates/{id}/edit\"")),
        "{page}"
    );
    let edit = format!("/console/templates/{id}/edit");
    let form = get(&app, &cookie, &edit).await;
    // Filled from the template: its cap, threshold, fixed validity and stacking.
    for shown in [
        "value=\"10.00\"",
        "value=\"50.00\"",
        "value=\"100.00\"",
        "value=\"2026-12-31T00:00\"",
    ] {
        assert!(form.contains(shown), "{shown} in {form}");
    }
    assert!(form.contains("<option value=\"stackable\" selected"));
    // Every field as the form holds it, with the title and the stock changed.
    let fields = [
        ("title", "Spring, bigger"),
        ("kind", "percent_off"),
        ("value", "10.00"),
        ("cap", "50.00"),
        ("threshold", "100.00"),
        ("cities", "1"),
        ("total_stock", "40"),
        ("per_user_limit", "1"),
        ("stacking", "stackable"),
        ("audience", "everyone"),
        ("refund_policy", "return"),
        ("validity", "fixed"),
        ("valid_from", "2026-11-24T13:00"),
        ("valid_until", "2026-12-31T00:00"),
        ("claim_start", "2026-11-24T13:00"),
        ("claim_end", "2026-11-30T00:00"),
    ];
    let mut refused = fields.to_vec();
    refused[6] = ("total_stock", "0");
    let a = post(&app, &cookie, &edit, &form, &refused).await;
    assert_eq!(a.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", a.body);
    assert!(a.body.contains("data-field=\"total_stock\""), "{}", a.body);
    assert!(
        a.body.contains("value=\"Spring, bigger\""),
        "what was typed is kept"
    );
    let a = post(&app, &cookie, &edit, &form, &fields).await;
    assert_eq!(a.status, StatusCode::SEE_OTHER, "{}", a.body);
    let (_, t) = v1(
        &app,
        &mkey,
        Method::GET,
        &format!("/v1/templates/{id}"),
        json!({}),
    )
    .await;
    assert_eq!(
        (&t["title"], &t["total_stock"]),
        (&json!("Spring, bigger"), &json!(40))
    );
    assert_eq!(
        t["value"],
        json!({"kind": "percent_off", "bps": 1000, "cap": 5000})
    );
    let page = get(&app, &cookie, &format!("/console/templates/{id}")).await;
    assert!(element(&page, "changes", "table").contains("<b>title</b>: Spring → Spring, bigger"));
}
