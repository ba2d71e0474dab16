//! The audit trail in the console: a person who publishes a template from its page is named
//! by email on that template's History page with the status before and after, next to the
//! machine (API key) that created it; the page downloads as CSV; merchant staff, who may not
//! read the trail, get the API's refusal as a page.

mod support;

use axum::http::{Method, StatusCode};
use coupond_api::AppSettings;
use coupond_domain::OperatorRole;
use coupond_store::Role;

use support::{
    account, account_cookie, answer, app_with_settings, csrf_of, form_post, key, merchant,
    page_get, template_body, v1,
};

#[tokio::test]
async fn a_template_page_history_names_who_changed_it() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    account(&app, "own@example.com", OperatorRole::Owner, Some(m)).await;
    account(&app, "sam@example.com", OperatorRole::Staff, Some(m)).await;
    let body = template_body("Spring", 10, "2026-12-31T00:00:00Z");
    let (status, t) = v1(&app, &mkey, Method::POST, "/v1/templates", body).await;
    assert_eq!(status, StatusCode::CREATED, "{t}");
    let id = t["id"].as_i64().unwrap();

    let owner = account_cookie(&app, "own@example.com").await;
    let template = answer(&app, page_get(&format!("/console/templates/{id}"), &owner)).await;
    assert!(template
        .body
        .contains(&format!("/console/history?object=template:{id}")));
    let publish = format!("/console/templates/{id}/publish");
    let csrf = format!("csrf={}", csrf_of(&template.body));
    let done = answer(&app, form_post(&publish, Some(&owner), csrf)).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);

    let history = format!("/console/history?object=template:{id}");
    let page = answer(&app, page_get(&history, &owner)).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let rows: Vec<&str> = page.body.split("<tr><td>").skip(1).collect();
    assert_eq!(rows.len(), 2, "publish and create: {}", page.body);
    assert!(rows[0].contains("own@example.com"), "{}", rows[0]);
    assert!(rows[0].contains("template.publish"), "{}", rows[0]);
    assert!(rows[0].contains("draft"), "{}", rows[0]);
    assert!(rows[1].contains("template.create") && rows[1].contains("key:"));

    let csv = format!("/console/history.csv?object=template:{id}");
    let file = answer(&app, page_get(&csv, &owner)).await;
    assert_eq!(file.status, StatusCode::OK);
    assert!(
        file.body.starts_with("id,at,actor,actor_name,action"),
        "{}",
        file.body
    );
    assert!(file.body.contains("own@example.com") && file.body.contains("template.publish"));

    let staff = account_cookie(&app, "sam@example.com").await;
    let refused = answer(&app, page_get(&history, &staff)).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    assert!(
        !refused.body.contains("template.publish"),
        "{}",
        refused.body
    );
}
