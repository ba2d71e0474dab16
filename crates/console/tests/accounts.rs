//! Signing into the console with an operator account: the right password of an enabled
//! `admin` opens the platform's console and an `owner`'s their merchant's, a `support`
//! account the platform's (what it may change is checked by the API); a wrong password and an
//! unknown email get the same words;
//! disabling the account or changing its password ends a copied session at once; failures
//! past the free ones wait, even with the right password.

mod support;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use coupond_api::AppSettings;
use coupond_domain::{Email, MerchantId, OperatorDraft, OperatorRole};
use coupond_engine::accounts::Accounts;

use support::{answer, app_with_settings, form_post, merchant, page_get, Answer, App};

const RIGHT: &str = "correct horse battery staple";

/// The sign-in form with `email` and `password`, from the console's own page.
fn sign_in(email: &str, password: &str) -> Request<Body> {
    let form = format!("email={email}&password={}", password.replace(' ', "+"));
    form_post("/console/login", None, form)
}

async fn home(app: &App, cookie: &str) -> Answer {
    answer(app, page_get("/console", cookie)).await
}

async fn add(accounts: &Accounts, email: &str, role: OperatorRole, m: Option<MerchantId>) {
    let draft = OperatorDraft::new(Email::parse(email).unwrap(), "X".into(), role, m).unwrap();
    accounts.add(&draft, Some(RIGHT)).await.unwrap();
}

/// A session cookie of `email`, asserting the sign-in went to the console.
async fn signed_in(app: &App, email: &str) -> String {
    let a = answer(app, sign_in(email, RIGHT)).await;
    assert_eq!(a.status, StatusCode::SEE_OTHER, "{email}: {}", a.body);
    a.cookie.unwrap()
}

#[tokio::test]
async fn people_sign_in_with_their_accounts() {
    let app = app_with_settings(AppSettings::default()).await;
    let accounts = Accounts::new(app.store.clone(), Arc::new(app.clock.clone()));
    let m = merchant(&app).await;
    add(&accounts, "ada@example.com", OperatorRole::Admin, None).await;
    add(&accounts, "own@example.com", OperatorRole::Owner, Some(m)).await;
    add(&accounts, "sue@example.com", OperatorRole::Support, None).await;

    let admin = signed_in(&app, "ada@example.com").await;
    let page = home(&app, &admin).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("<h1>Platform</h1>"), "{}", page.body);
    let owner = signed_in(&app, "own@example.com").await;
    let page = home(&app, &owner).await;
    assert!(page.body.contains("<h1>Your coupons</h1>"), "{}", page.body);

    let wrong = answer(
        &app,
        sign_in("ada@example.com", "correct horse battery stapler"),
    )
    .await;
    let unknown = answer(&app, sign_in("nobody@example.com", RIGHT)).await;
    assert_eq!(
        (wrong.status, unknown.status),
        (StatusCode::UNAUTHORIZED, StatusCode::UNAUTHORIZED)
    );
    assert!(
        wrong
            .body
            .contains("The email, the password or the code is wrong."),
        "{}",
        wrong.body
    );
    assert!(
        unknown
            .body
            .contains("The email, the password or the code is wrong."),
        "{}",
        unknown.body
    );
    // A support account signs in too; what it may change is its role's, checked by the API.
    let support = signed_in(&app, "sue@example.com").await;
    assert_eq!(home(&app, &support).await.status, StatusCode::OK);

    let ada = accounts
        .by_email(&Email::parse("ada@example.com").unwrap())
        .await
        .unwrap();
    accounts.set_disabled(ada.id, true).await.unwrap();
    assert_eq!(
        home(&app, &admin).await.status,
        StatusCode::SEE_OTHER,
        "disabled, still in"
    );
    let again = answer(&app, sign_in("ada@example.com", RIGHT)).await;
    assert_eq!(
        again.status,
        StatusCode::UNAUTHORIZED,
        "a disabled account signed in"
    );
    let own = accounts
        .by_email(&Email::parse("own@example.com").unwrap())
        .await
        .unwrap();
    accounts
        .set_password(own.id, "a brand new passphrase")
        .await
        .unwrap();
    assert_eq!(
        home(&app, &owner).await.status,
        StatusCode::SEE_OTHER,
        "new password, old session"
    );
}

#[tokio::test]
async fn failed_sign_ins_wait_past_the_free_ones() {
    let app = app_with_settings(AppSettings::default()).await;
    let accounts = Accounts::new(app.store.clone(), Arc::new(app.clock.clone()));
    add(&accounts, "ada@example.com", OperatorRole::Admin, None).await;
    for _ in 0..6 {
        let a = answer(&app, sign_in("ada@example.com", "not the password at all")).await;
        assert_eq!(a.status, StatusCode::UNAUTHORIZED, "{}", a.body);
    }
    let held = answer(&app, sign_in("ADA@example.com", RIGHT)).await;
    assert_eq!(held.status, StatusCode::TOO_MANY_REQUESTS, "{}", held.body);
    assert!(
        held.body
            .contains("Too many failed sign-ins: try again in 1 second."),
        "{}",
        held.body
    );
    app.clock.advance(time::Duration::seconds(1));
    signed_in(&app, "ada@example.com").await;
}
