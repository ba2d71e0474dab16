//! The Audits page (the platform's admins): the self-audit's runs newest first, "Run now"
//! queues one (CSRF-guarded) that the page shows queued until the background loop made it,
//! then passed or with what it found; other roles are refused the page.

mod support;

use std::sync::Arc;

use axum::http::StatusCode;
use coupond_api::AppSettings;
use coupond_domain::OperatorRole;
use coupond_engine::self_audit::Auditor;

use support::{
    account, account_cookie, answer, app_with_settings, csrf_of, form_post, merchant, page_get,
};

#[tokio::test]
async fn admins_run_the_audit_and_read_what_it_found() {
    let app = app_with_settings(AppSettings::default()).await;
    account(&app, "ada@example.com", OperatorRole::Admin, None).await;
    let cookie = account_cookie(&app, "ada@example.com").await;
    let page = answer(&app, page_get("/console/audits", &cookie)).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains("No run yet."), "{}", page.body);
    assert!(
        page.body
            .contains("only when asked (background.audit_at is off)"),
        "{}",
        page.body
    );
    assert!(page.body.contains("id=\"run-now\""), "{}", page.body);

    // Without the page's token nothing is queued; with it, a run is.
    let forged = answer(
        &app,
        form_post("/console/audits", Some(&cookie), "csrf=x".into()),
    )
    .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "{}", forged.body);
    let csrf = csrf_of(&page.body);
    let done = answer(
        &app,
        form_post("/console/audits", Some(&cookie), format!("csrf={csrf}")),
    )
    .await;
    assert_eq!(
        (done.status, done.location.as_str()),
        (StatusCode::SEE_OTHER, "/console/audits")
    );
    let page = answer(&app, page_get("/console/audits", &cookie)).await;
    assert!(page.body.contains("id=\"run-1\""), "{}", page.body);
    assert!(page.body.contains(">queued<"), "{}", page.body);
    assert!(
        !page.body.contains("id=\"run-2\""),
        "one run: {}",
        page.body
    );

    // The background loop makes it: a fresh database passes.
    let auditor = Auditor::new(app.store.clone(), Arc::new(app.clock.clone()), None, "t");
    auditor.run_once().await.unwrap().finished.expect("made");
    let page = answer(&app, page_get("/console/audits", &cookie)).await;
    assert!(page.body.contains(">passed<"), "{}", page.body);
    assert!(page.body.contains("id=\"menu-audits\""), "{}", page.body);

    // Marketing and a merchant's owner are refused the page, in words.
    account(&app, "mia@example.com", OperatorRole::Marketing, None).await;
    let mia = account_cookie(&app, "mia@example.com").await;
    let refused = answer(&app, page_get("/console/audits", &mia)).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    let m = merchant(&app).await;
    account(&app, "olga@example.com", OperatorRole::Owner, Some(m)).await;
    let olga = account_cookie(&app, "olga@example.com").await;
    let refused = answer(&app, page_get("/console/audits", &olga)).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
}
