//! Console sessions: found by their id until they expire, ended by sign-out and by revoking
//! the key they were signed in with; expired ones are dropped as new ones are made.

use super::*;
use crate::ConsoleSession;

fn session(key_hash: [u8; 32], csrf: &str, hours: i64) -> ConsoleSession {
    ConsoleSession {
        key_hash,
        operator_id: None,
        csrf: csrf.into(),
        created_at: t0(),
        expires_at: at(hours),
    }
}

pub async fn console_sessions_end_with_sign_out_expiry_and_their_key(s: Arc<dyn Store>) {
    let key = NewApiKey {
        hash: [3; 32],
        prefix: "cpd_ses".into(),
        role: Role::Platform,
        merchant_id: None,
        label: String::new(),
        operator_id: None,
    };
    let k = s.insert_api_key(&key, t0()).await.unwrap();
    let (a, b, c) = ([1; 32], [2; 32], [4; 32]);
    s.insert_console_session(&a, &session([3; 32], "ta", 8))
        .await
        .unwrap();
    s.insert_console_session(&b, &session([3; 32], "tb", 8))
        .await
        .unwrap();
    s.insert_console_session(&c, &session([5; 32], "tc", 1))
        .await
        .unwrap();
    let found = s.console_session(&a, at(1)).await.unwrap().unwrap();
    assert_eq!(found, session([3; 32], "ta", 8));
    assert_eq!(s.console_session(&[9; 32], at(1)).await.unwrap(), None);
    assert_eq!(s.console_session(&c, at(1)).await.unwrap(), None, "expired");
    s.end_console_session(&a).await.unwrap();
    s.end_console_session(&a).await.unwrap();
    assert_eq!(
        s.console_session(&a, at(0)).await.unwrap(),
        None,
        "signed out"
    );
    assert!(s.console_session(&b, at(0)).await.unwrap().is_some());
    s.revoke_api_key(k.id, at(2)).await.unwrap();
    assert_eq!(
        s.console_session(&b, at(2)).await.unwrap(),
        None,
        "key revoked"
    );
}
