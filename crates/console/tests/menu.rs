//! Each person sees what their role may use, by the API's own rule (`OperatorRole::may`):
//! the menu's Approvals for the platform's campaign roles, People and Audit trail for admins
//! and merchant owners, Audits (the self-audit's runs) for the platform's admins, a merchant
//! owner's own API keys; a support person is offered a
//! coupon's revoke form, a finance person is not; a merchant's staff neither sees keys nor,
//! going to their page by hand, is shown them.

mod support;

use axum::http::StatusCode;
use coupond_api::AppSettings;
use coupond_domain::OperatorRole;

use support::{account, account_cookie, answer, app_with_settings, merchant, page_get, App};

async fn home(app: &App, cookie: &str) -> String {
    let a = answer(app, page_get("/console", cookie)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    a.body
}

fn menu(page: &str) -> Vec<&'static str> {
    [
        "menu-approvals",
        "menu-people",
        "menu-audit",
        "menu-audits",
        "menu-keys",
    ]
    .into_iter()
    .filter(|id| page.contains(&format!("id=\"{id}\"")))
    .collect()
}

#[tokio::test]
async fn the_menu_follows_the_role() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let people = [
        ("ada@example.com", OperatorRole::Admin, None),
        ("mia@example.com", OperatorRole::Marketing, None),
        ("sue@example.com", OperatorRole::Support, None),
        ("fin@example.com", OperatorRole::Finance, None),
        ("olga@example.com", OperatorRole::Owner, Some(m)),
        ("sid@example.com", OperatorRole::Staff, Some(m)),
    ];
    let mut seen = vec![];
    for (email, role, merchant) in people {
        account(&app, email, role, merchant).await;
        let cookie = account_cookie(&app, email).await;
        seen.push((role, menu(&home(&app, &cookie).await)));
    }
    assert_eq!(
        seen,
        [
            (
                OperatorRole::Admin,
                vec!["menu-approvals", "menu-people", "menu-audit", "menu-audits"]
            ),
            (OperatorRole::Marketing, vec!["menu-approvals"]),
            (OperatorRole::Support, vec![]),
            (OperatorRole::Finance, vec![]),
            (
                OperatorRole::Owner,
                vec!["menu-people", "menu-audit", "menu-keys"]
            ),
            (OperatorRole::Staff, vec![]),
        ]
    );
    // Staff opening the merchant's page by hand see no keys and no key form.
    let staff = account_cookie(&app, "sid@example.com").await;
    let page = answer(&app, page_get(&format!("/console/merchants/{m}"), &staff)).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(!page.body.contains("API keys") && !page.body.contains("key-form"));
    let owner = account_cookie(&app, "olga@example.com").await;
    let page = answer(&app, page_get(&format!("/console/merchants/{m}"), &owner)).await;
    assert!(page.body.contains("id=\"key-form\""), "{}", page.body);
    assert!(
        !page.body.contains("merchant-form"),
        "only the platform edits a merchant"
    );
    // The form to add a merchant is offered only to a role the API lets add one.
    for (email, offered) in [
        ("ada@example.com", true),
        ("mia@example.com", false),
        ("sue@example.com", false),
        ("fin@example.com", false),
    ] {
        let cookie = account_cookie(&app, email).await;
        let page = answer(&app, page_get("/console/merchants", &cookie)).await;
        assert_eq!(page.status, StatusCode::OK, "{email}: {}", page.body);
        assert_eq!(
            page.body.contains("id=\"create-merchant\""),
            offered,
            "{email}"
        );
    }
}
