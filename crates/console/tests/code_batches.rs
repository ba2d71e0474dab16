//! Codes from a template's page: asking for more codes than coupons are left says so with the
//! numbers and makes nothing until the person chooses (the stock left, or all anyway); a
//! prefix the API refuses is shown at the form, which keeps what was typed.

mod support;

use axum::http::{Method, StatusCode};
use coupond_api::AppSettings;
use coupond_store::Role;
use serde_json::json;

use support::{
    answer, app_with_settings, csrf_of, form_post, key, merchant, page_get, published,
    sign_in_cookie, template_body, v1,
};

#[tokio::test]
async fn more_codes_than_stock_asks_first_and_a_bad_prefix_keeps_the_form() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let t = published(
        &app,
        &mkey,
        template_body("Spring", 10, "2026-12-31T00:00:00Z"),
    )
    .await;
    let cookie = sign_in_cookie(&app, &mkey).await;
    let page = format!("/console/templates/{t}");
    let csrf = csrf_of(&answer(&app, page_get(&page, &cookie)).await.body);
    let codes = format!("{page}/codes");

    let asked = answer(
        &app,
        form_post(
            &codes,
            Some(&cookie),
            format!("csrf={csrf}&count=20&prefix="),
        ),
    )
    .await;
    assert_eq!(asked.status, StatusCode::OK, "{}", asked.body);
    assert!(
        asked
            .body
            .contains("20 codes asked for, but only 10 coupons are left"),
        "{}",
        asked.body
    );
    assert!(asked.body.contains("id=\"codes-left\"") && asked.body.contains("Make 10"));
    assert_eq!(
        batches(&app, &mkey, t).await,
        0,
        "nothing is made before the choice"
    );
    let anyway = format!("csrf={csrf}&count=20&prefix=&anyway=1");
    let made = answer(&app, form_post(&codes, Some(&cookie), anyway)).await;
    assert_eq!(made.status, StatusCode::SEE_OTHER, "{}", made.body);
    assert_eq!(batches(&app, &mkey, t).await, 1);

    // `I` is not a code character: refused at the form, the typed values kept.
    let bad = format!("csrf={csrf}&count=5&prefix=WIN");
    let refused = answer(&app, form_post(&codes, Some(&cookie), bad)).await;
    assert_eq!(
        refused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        refused.body
    );
    assert!(
        refused.body.contains("id=\"codes-error\""),
        "{}",
        refused.body
    );
    assert!(
        refused
            .body
            .contains("prefix: &#39;I&#39; cannot be in a code"),
        "{}",
        refused.body
    );
    assert!(refused.body.contains("value=\"5\"") && refused.body.contains("value=\"WIN\""));
    assert_eq!(batches(&app, &mkey, t).await, 1);
}

/// How many code batches template `t` has.
async fn batches(app: &support::App, key: &str, t: i64) -> usize {
    let path = format!("/v1/templates/{t}/code-batches");
    let (_, b) = v1(app, key, Method::GET, &path, json!({})).await;
    b["items"].as_array().map_or(0, Vec::len)
}
