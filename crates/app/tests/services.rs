//! The application layer called directly, as the console and any front door other than HTTP
//! call it: who may claim for whom, a claim and its retry, and what a merchant may see, each
//! decided by `App` with the caller, not by a handler.

use std::sync::Arc;

use coupond_app::claims::ClaimRequest;
use coupond_app::{App, AppError, AppSettings, Principal, RetryKey};
use coupond_domain::{MerchantId, Template, TemplateDraft, Timestamp, UserId};
use coupond_engine::ManualClock;
use coupond_store::Store;
use coupond_store_sqlite::SqliteDb;

/// The application, and the store beneath it (to set up and to check what was kept).
async fn app_and_store(dir: &tempfile::TempDir) -> (App, Arc<dyn Store>) {
    let url = format!("sqlite://{}/app.db", dir.path().display());
    let store = SqliteDb::connect(&url).await.unwrap();
    store.migrate().await.unwrap();
    let store: Arc<dyn Store> = Arc::new(store);
    let clock = ManualClock::new(Timestamp::parse("2026-12-01T09:00:00Z").unwrap());
    let app = App::new(
        store.clone(),
        Arc::new(clock),
        b"secret",
        AppSettings::default(),
    );
    (app, store)
}

async fn app(dir: &tempfile::TempDir) -> App {
    app_and_store(dir).await.0
}

/// An application with one draft template of the platform.
async fn with_template(dir: &tempfile::TempDir) -> (App, Arc<dyn Store>, Template) {
    let (app, store) = app_and_store(dir).await;
    let t = app.create_template(&Principal::Platform, &draft()).await;
    (app, store, t.unwrap())
}

/// A standalone template of the platform, claimable for a day from now.
fn draft() -> TemplateDraft {
    serde_json::from_value(serde_json::json!({
        "title": "10 off",
        "value": {"kind": "amount_off", "amount": 1000},
        "cities": [1],
        "total_stock": 5,
        "per_user_limit": 1,
        "claim_window": {"start": "2026-12-01T09:00:00Z", "end": "2026-12-02T09:00:00Z"},
        "validity": {"type": "relative", "days": 7}
    }))
    .unwrap()
}

fn user(s: &str) -> UserId {
    UserId::parse(s).unwrap()
}

fn field_of(e: &AppError) -> Option<(&str, Option<&str>)> {
    match e {
        AppError::Invalid { code, field, .. } => Some((code, field.as_deref())),
        _ => None,
    }
}

#[tokio::test]
async fn users_claim_for_themselves_and_services_name_the_user() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(&dir).await;
    let ada = Principal::User(user("ada"));
    let other = app.claimant(&ada, Some(user("bob")), None).unwrap_err();
    assert_eq!(field_of(&other), Some(("not_allowed", Some("user_id"))));
    let unnamed = app
        .claimant(&Principal::Service(1), None, None)
        .unwrap_err();
    assert_eq!(field_of(&unnamed), Some(("missing_field", Some("user_id"))));
    let named = app.claimant(&Principal::Service(1), Some(user("bob")), None);
    assert_eq!(named.unwrap().user(), &user("bob"));
}

#[tokio::test]
async fn a_claim_issues_once_and_its_retry_gets_the_same_coupon() {
    let dir = tempfile::tempdir().unwrap();
    let (app, store, t) = with_template(&dir).await;
    let t = coupond_engine::campaigns::publish_template(store.as_ref(), &t, app.now())
        .await
        .unwrap();
    let ada = Principal::User(user("ada"));
    let claim = |key: &str| ClaimRequest {
        template: t.id,
        listing: None,
        source: None,
        retry: RetryKey::parse(&ada, key),
    };
    let who = || app.claimant(&ada, None, None).unwrap();
    let first = app.claim(who(), claim("k1")).await.unwrap();
    assert!(!first.claimed.replayed);
    assert_eq!(first.claimed.coupon.user_id, user("ada"));
    let again = app.claim(who(), claim("k1")).await.unwrap();
    assert!(
        again.claimed.replayed,
        "a retry with its key is answered from the first"
    );
    assert_eq!(again.claimed.coupon.id, first.claimed.coupon.id);
    let second = app.claim(who(), claim("k2")).await.unwrap_err();
    assert!(
        matches!(second, AppError::ClaimRefused(_)),
        "one per user: {second:?}"
    );
    let held = store.as_ref().template(t.id).await.unwrap();
    assert_eq!(held.claimed, 1, "the stock counts one coupon");
}

#[tokio::test]
async fn a_merchant_sees_neither_the_platform_templates_nor_their_codes() {
    let dir = tempfile::tempdir().unwrap();
    let (app, store, t) = with_template(&dir).await;
    let merchant = Principal::Merchant(MerchantId::new(1).unwrap());
    let seen = app.visible_template(&merchant, t.id).await;
    assert!(matches!(seen, Err(AppError::NotFound)), "{seen:?}");
    let set = app.set_shared_code(&merchant, t.id, "WINTER24").await;
    assert!(matches!(set, Err(AppError::NotFound)), "{set:?}");
    assert!(store.as_ref().shared_code(t.id).await.unwrap().is_none());
    let platform = app.visible_template(&Principal::Platform, t.id).await;
    assert_eq!(platform.unwrap().id, t.id);
}
