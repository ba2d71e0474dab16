//! Signing in as an operator: only the right password of an enabled account opens it, and an
//! unknown email, a disabled account, an account with no password yet and a wrong password
//! all get the same `None`; a new password replaces the old one.

use std::sync::Arc;

use coupond_domain::{Email, OperatorDraft, OperatorRole, Timestamp};
use coupond_engine::accounts::{AccountError, Accounts};
use coupond_engine::ManualClock;
use coupond_store::Store;
use coupond_store_sqlite::SqliteDb;

const RIGHT: &str = "correct horse battery staple";

#[tokio::test]
async fn only_the_right_password_of_an_enabled_account_opens_it() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/accounts.db", dir.path().display());
    let store = SqliteDb::connect(&url).await.unwrap();
    store.migrate().await.unwrap();
    let store: Arc<dyn Store> = Arc::new(store);
    let clock = ManualClock::new(Timestamp::parse("2026-11-27T09:00:00Z").unwrap());
    let accounts = Accounts::new(store, Arc::new(clock));
    let email = |s: &str| Email::parse(s).unwrap();
    let draft = |e: &str| {
        OperatorDraft::new(email(e), "Ada".into(), OperatorRole::Marketing, None).unwrap()
    };
    let ada = accounts
        .add(&draft("ada@example.com"), Some(RIGHT))
        .await
        .unwrap();
    accounts.add(&draft("new@example.com"), None).await.unwrap();
    let taken = accounts.add(&draft("ADA@example.com"), Some(RIGHT)).await;
    assert!(matches!(taken, Err(AccountError::EmailTaken)), "{taken:?}");

    let opened = accounts
        .verify(&email("ada@example.com"), RIGHT)
        .await
        .unwrap();
    assert_eq!(opened.map(|o| o.id), Some(ada.id));
    for (who, password) in [
        ("ada@example.com", "correct horse battery stapler"),
        ("nobody@example.com", RIGHT),
        ("new@example.com", RIGHT),
    ] {
        let answer = accounts.verify(&email(who), password).await.unwrap();
        assert!(answer.is_none(), "{who} opened with {password}");
    }

    accounts.set_disabled(ada.id, true).await.unwrap();
    assert!(accounts
        .verify(&email("ada@example.com"), RIGHT)
        .await
        .unwrap()
        .is_none());
    accounts.set_disabled(ada.id, false).await.unwrap();
    accounts
        .set_password(ada.id, "a different long passphrase")
        .await
        .unwrap();
    assert!(accounts
        .verify(&email("ada@example.com"), RIGHT)
        .await
        .unwrap()
        .is_none());
    let new = accounts
        .verify(&email("ada@example.com"), "a different long passphrase")
        .await
        .unwrap();
    assert_eq!(new.map(|o| o.id), Some(ada.id));
    let weak = accounts.set_password(ada.id, "password1234").await;
    assert!(matches!(weak, Err(AccountError::Invalid(_))), "{weak:?}");
}

#[tokio::test]
async fn a_set_password_link_works_once_within_the_hour() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/resets.db", dir.path().display());
    let store = SqliteDb::connect(&url).await.unwrap();
    store.migrate().await.unwrap();
    let clock = ManualClock::new(Timestamp::parse("2026-11-27T09:00:00Z").unwrap());
    let accounts = Accounts::new(Arc::new(store), Arc::new(clock.clone()));
    let email = Email::parse("new@example.com").unwrap();
    let draft = OperatorDraft::new(email.clone(), "New".into(), OperatorRole::Support, None);
    let op = accounts.add(&draft.unwrap(), None).await.unwrap();

    let token = accounts.start_reset(op.id).await.unwrap();
    assert_eq!(token.len(), 64, "{token}");
    let weak = accounts.finish_reset(&token, "short").await;
    assert!(matches!(weak, Err(AccountError::Invalid(_))), "{weak:?}");
    let set = accounts.finish_reset(&token, RIGHT).await.unwrap();
    assert_eq!(set, op.id, "a refused password left the link usable");
    assert!(accounts.verify(&email, RIGHT).await.unwrap().is_some());
    let again = accounts
        .finish_reset(&token, "another long passphrase")
        .await;
    assert!(
        matches!(again, Err(AccountError::ResetInvalid)),
        "{again:?}"
    );

    let late = accounts.start_reset(op.id).await.unwrap();
    clock.advance(time::Duration::seconds(3601));
    let expired = accounts
        .finish_reset(&late, "another long passphrase")
        .await;
    assert!(
        matches!(expired, Err(AccountError::ResetInvalid)),
        "{expired:?}"
    );
    let forged = accounts
        .finish_reset(&"0".repeat(64), "another long passphrase")
        .await;
    assert!(
        matches!(forged, Err(AccountError::ResetInvalid)),
        "{forged:?}"
    );
    assert!(accounts.verify(&email, RIGHT).await.unwrap().is_some());

    // A link made before the account was disabled sets nothing (issue 61 point 7).
    let kept = accounts.start_reset(op.id).await.unwrap();
    accounts.set_disabled(op.id, true).await.unwrap();
    let disabled = accounts
        .finish_reset(&kept, "another long passphrase")
        .await;
    assert!(
        matches!(disabled, Err(AccountError::ResetInvalid)),
        "{disabled:?}"
    );
    accounts.set_disabled(op.id, false).await.unwrap();
    assert!(
        accounts.verify(&email, RIGHT).await.unwrap().is_some(),
        "the old password stands"
    );
    let used = accounts
        .finish_reset(&kept, "another long passphrase")
        .await;
    assert!(matches!(used, Err(AccountError::ResetInvalid)), "used up");
}
