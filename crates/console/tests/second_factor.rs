//! The second factor and who may sign in how: a person turns on an authenticator app's codes
//! from their account page (proving the app has the secret), after which signing in takes a
//! current code, each code once, and a wrong or missing one gets the same words as a wrong
//! password; a platform console that requires it sends a platform account without one to set
//! it up first; signing in with an API key is off unless `console.key_sign_in` says so.

mod support;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use coupond_api::AppSettings;
use coupond_domain::OperatorRole;
use coupond_engine::second_factor::{self, code_at};
use coupond_engine::Clock;
use coupond_store::Role;

use support::{
    account, account_sign_in, answer, app_with_console, csrf_of, form_post, key, merchant,
    page_get, test_console, v1,
};

fn between<'a>(page: &'a str, start: &str, end: &str) -> &'a str {
    page.split(start)
        .nth(1)
        .and_then(|r| r.split(end).next())
        .unwrap()
}

#[tokio::test]
async fn a_second_factor_is_turned_on_and_then_asked_for_each_sign_in() {
    let app = app_with_console(AppSettings::default(), test_console()).await;
    account(&app, "ada@example.com", OperatorRole::Admin, None).await;
    let first = account_sign_in(&app, "ada@example.com", "").await;
    assert_eq!(first.status, StatusCode::SEE_OTHER, "{}", first.body);
    let cookie = first.cookie.unwrap();

    let page = answer(&app, page_get("/console/account", &cookie)).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains("ada@example.com"), "{}", page.body);
    let secret = between(&page.body, "id=\"totp-secret\">", "<").to_owned();
    let csrf = csrf_of(&page.body);
    assert!(page
        .body
        .contains("otpauth://totp/coupond:ada%40example.com"));
    // A code that is not the app's is refused, and nothing changes.
    let wrong = format!("csrf={csrf}&secret={secret}&code=000000");
    let r = answer(
        &app,
        form_post("/console/account/totp", Some(&cookie), wrong),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    let now = app.clock.now();
    let code = code_at(&secret, now).unwrap();
    let on = format!("csrf={csrf}&secret={secret}&code={code}");
    let r = answer(&app, form_post("/console/account/totp", Some(&cookie), on)).await;
    assert_eq!(
        (r.status, r.location.as_str()),
        (StatusCode::SEE_OTHER, "/console/account?notice=on")
    );
    // In the audit trail under the person who did it, from their address (issue 61 point 5),
    // not as coupond itself.
    let (platform, _) = key(&app, Role::Platform, None).await;
    let (status, trail) = v1(
        &app,
        &platform,
        Method::GET,
        "/v1/audit?actor=ada@example.com",
        serde_json::Value::Null,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{trail}");
    let on = trail["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "operator.totp_on")
        .unwrap_or_else(|| panic!("no totp_on entry: {trail}"));
    assert_eq!(
        (&on["actor_name"], &on["client"]),
        (
            &serde_json::json!("ada@example.com"),
            &serde_json::json!("192.0.2.7")
        ),
        "{on}"
    );

    // Signing in now takes a current code, once; a missing or wrong one reads as a wrong
    // password.
    app.clock.advance(time::Duration::seconds(30));
    for code in ["", "123456"] {
        let r = account_sign_in(&app, "ada@example.com", code).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{code}: {}", r.body);
        assert!(r
            .body
            .contains("The email, the password or the code is wrong."));
    }
    let code = code_at(&secret, app.clock.now()).unwrap();
    let r = account_sign_in(&app, "ada@example.com", &code).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let again = account_sign_in(&app, "ada@example.com", &code).await;
    assert_eq!(again.status, StatusCode::UNAUTHORIZED, "a code works once");

    // Turning it off takes a current code too.
    app.clock.advance(time::Duration::seconds(30));
    let cookie = r.cookie.unwrap();
    let page = answer(&app, page_get("/console/account", &cookie)).await;
    assert!(page.body.contains("id=\"totp-state\">on<"), "{}", page.body);
    let csrf = csrf_of(&page.body);

    // A signed-in session cannot put another app's secret in its place without a current
    // code (issue 61 point 6): the old app's codes keep working.
    let other = second_factor::new_secret();
    let other_code = code_at(&other, app.clock.now()).unwrap();
    let replace = format!("csrf={csrf}&secret={other}&code={other_code}");
    let r = answer(
        &app,
        form_post("/console/account/totp", Some(&cookie), replace),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert!(
        r.body.contains("turn it off with its current code first"),
        "{}",
        r.body
    );
    let ours = code_at(&secret, app.clock.now()).unwrap();
    let r = account_sign_in(&app, "ada@example.com", &ours).await;
    assert_eq!(
        r.status,
        StatusCode::SEE_OTHER,
        "the old factor holds: {}",
        r.body
    );
    app.clock.advance(time::Duration::seconds(30));
    let code = code_at(&secret, app.clock.now()).unwrap();
    let off = format!("csrf={csrf}&code={code}");
    let r = answer(
        &app,
        form_post("/console/account/totp/off", Some(&cookie), off),
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let r = account_sign_in(&app, "ada@example.com", "").await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "off again: {}", r.body);
}

#[tokio::test]
async fn a_console_requiring_it_sends_platform_accounts_to_set_it_up_first() {
    let settings = coupond_console::ConsoleSettings {
        require_totp_for_platform: true,
        ..test_console()
    };
    let app = app_with_console(AppSettings::default(), settings).await;
    let m = merchant(&app).await;
    account(&app, "ada@example.com", OperatorRole::Marketing, None).await;
    account(&app, "own@example.com", OperatorRole::Owner, Some(m)).await;

    let ada = account_sign_in(&app, "ada@example.com", "")
        .await
        .cookie
        .unwrap();
    for page in ["/console", "/console/templates", "/console/history"] {
        let r = answer(&app, page_get(page, &ada)).await;
        assert_eq!(
            (r.status, r.location.as_str()),
            (StatusCode::SEE_OTHER, "/console/account"),
            "{page}"
        );
    }
    let r = answer(&app, page_get("/console/account", &ada)).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body.contains("id=\"totp-required\""), "{}", r.body);
    // A merchant's owner is not asked.
    let owner = account_sign_in(&app, "own@example.com", "")
        .await
        .cookie
        .unwrap();
    assert_eq!(
        answer(&app, page_get("/console", &owner)).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn api_keys_sign_in_only_where_the_setting_allows() {
    let settings = coupond_console::ConsoleSettings {
        key_sign_in: false,
        ..test_console()
    };
    let app = app_with_console(AppSettings::default(), settings).await;
    let (platform, _) = key(&app, Role::Platform, None).await;
    let login = Request::get("/console/login").body(Body::empty()).unwrap();
    let page = answer(&app, login).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(!page.body.contains("id=\"key-sign-in\""), "{}", page.body);
    assert!(page.body.contains("id=\"account-sign-in\""));
    let r = answer(
        &app,
        form_post("/console/login", None, format!("key={platform}")),
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert!(r.body.contains("console.key_sign_in"), "{}", r.body);
    assert!(r.cookie.is_none(), "no session for a refused key");
}
