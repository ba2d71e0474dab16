//! The People page: an admin adds a person (who gets a one-time set-password link, shown
//! once, and no password passes through the console), disables and enables them, and each
//! change is in that person's history under the admin's email; a merchant's owner adds only
//! its own merchant's roles; merchant staff may not manage people.

mod support;

use axum::http::StatusCode;
use coupond_api::AppSettings;
use coupond_domain::OperatorRole;

use support::{
    account, account_cookie, answer, app_with_settings, csrf_of, form_post, merchant, page_get,
};

#[tokio::test]
async fn an_admin_adds_disables_and_enables_a_person_on_the_record() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    account(&app, "ada@example.com", OperatorRole::Admin, None).await;
    account(&app, "own@example.com", OperatorRole::Owner, Some(m)).await;
    account(&app, "sam@example.com", OperatorRole::Staff, Some(m)).await;
    let admin = account_cookie(&app, "ada@example.com").await;

    let a = answer(&app, page_get("/console/people", &admin)).await;
    let (status, page) = (a.status, a.body);
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("own@example.com") && page.contains("sam@example.com"));
    let token = csrf_of(&page);
    let form = format!("csrf={token}&email=mo%40example.com&name=Mo&role=marketing&merchant_id=");
    let a = answer(&app, form_post("/console/people", Some(&admin), form)).await;
    let (status, page) = (a.status, a.body);
    assert_eq!(status, StatusCode::OK, "{page}");
    let link = page
        .split("id=\"set-password-link\">")
        .nth(1)
        .and_then(|r| r.split('<').next())
        .unwrap();
    assert!(link.starts_with("/console/password/"), "{link}");
    let mo = page
        .split("action=\"/console/people/")
        .filter_map(|r| r.split('/').next())
        .filter_map(|id| id.parse::<i64>().ok())
        .max()
        .unwrap();
    let again = answer(&app, page_get("/console/people", &admin)).await.body;
    assert!(!again.contains(link), "the link is shown once");
    assert!(again.contains("mo@example.com") && again.contains("invited"));

    let off = format!("/console/people/{mo}/disable");
    let status = answer(&app, form_post(&off, Some(&admin), format!("csrf={token}")))
        .await
        .status;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let page = answer(&app, page_get("/console/people", &admin)).await.body;
    assert!(page.contains(&format!("id=\"enable-{mo}\"")), "{page}");
    let on = format!("/console/people/{mo}/enable");
    let status = answer(&app, form_post(&on, Some(&admin), format!("csrf={token}")))
        .await
        .status;
    assert_eq!(status, StatusCode::SEE_OTHER);

    let history = format!("/console/history?object=operator:{mo}");
    let page = answer(&app, page_get(&history, &admin)).await.body;
    for action in [
        "operator.create",
        "operator.reset_link",
        "operator.disable",
        "operator.enable",
    ] {
        assert!(page.contains(action), "{action}: {page}");
    }
    assert_eq!(page.matches(">ada@example.com</td>").count(), 4, "{page}");

    // A merchant's owner is offered its own merchant's roles only; its staff may not come in.
    let owner = account_cookie(&app, "own@example.com").await;
    let a = answer(&app, page_get("/console/people", &owner)).await;
    let (status, page) = (a.status, a.body);
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("value=\"staff\"") && !page.contains("value=\"admin\""));
    assert!(
        !page.contains("mo@example.com"),
        "the platform's people: {page}"
    );
    let staff = account_cookie(&app, "sam@example.com").await;
    let status = answer(&app, page_get("/console/people", &staff))
        .await
        .status;
    assert_eq!(status, StatusCode::FORBIDDEN);
}
