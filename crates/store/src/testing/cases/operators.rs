//! Operator accounts (issue 32): stored and read back by id and by email, listed per merchant
//! and by page, edited; disabling one or setting its password ends its console sessions and
//! no one else's; password reset tokens work once, and not after they expire.

use super::*;
use crate::ConsoleSession;
use coupond_domain::{Email, MerchantId, Operator, OperatorDraft, OperatorId, OperatorRole};

fn email(s: &str) -> Email {
    Email::parse(s).unwrap()
}

fn draft(addr: &str, role: OperatorRole, merchant: Option<MerchantId>) -> OperatorDraft {
    OperatorDraft::new(email(addr), format!("Name of {addr}"), role, merchant).unwrap()
}

async fn platform_operator(s: &Arc<dyn Store>, addr: &str) -> Operator {
    s.insert_operator(
        &draft(addr, OperatorRole::Support, None),
        Some("$hash"),
        t0(),
    )
    .await
    .unwrap()
}

fn session(operator: Option<OperatorId>, csrf: &str) -> ConsoleSession {
    ConsoleSession {
        key_hash: [6; 32],
        operator_id: operator,
        csrf: csrf.into(),
        created_at: t0(),
        expires_at: at(8),
    }
}

pub async fn operators_round_trip(s: Arc<dyn Store>) {
    let m = s.insert_merchant(&merchant("Ops Co", &[1]), t0()).await;
    let n = s.insert_merchant(&merchant("Other", &[1]), t0()).await;
    let (m, n) = (m.unwrap().id, n.unwrap().id);
    let admin = s
        .insert_operator(
            &draft("Admin@Example.com", OperatorRole::Admin, None),
            Some("$argon2id$v=19$admin"),
            t0(),
        )
        .await
        .unwrap();
    assert_eq!(
        (admin.email.as_str(), admin.name.as_str(), admin.role),
        (
            "admin@example.com",
            "Name of Admin@Example.com",
            OperatorRole::Admin
        )
    );
    assert_eq!(
        (admin.merchant_id, admin.has_password, admin.disabled_at),
        (None, true, None)
    );
    assert_eq!((admin.created_at, admin.updated_at), (t0(), t0()));
    let owner = s
        .insert_operator(
            &draft("owner@ops.co", OperatorRole::Owner, Some(m)),
            None,
            t0(),
        )
        .await
        .unwrap();
    assert_eq!((owner.merchant_id, owner.has_password), (Some(m), false));
    let staff = s
        .insert_operator(
            &draft("staff@ops.co", OperatorRole::Staff, Some(m)),
            None,
            t0(),
        )
        .await
        .unwrap();
    let other = s
        .insert_operator(
            &draft("staff@other.co", OperatorRole::Staff, Some(n)),
            None,
            t0(),
        )
        .await
        .unwrap();

    assert_eq!(s.operator(admin.id).await.unwrap(), admin);
    let missing = OperatorId::new(other.id.get() + 100).unwrap();
    assert!(matches!(
        s.operator(missing).await,
        Err(StoreError::NotFound)
    ));
    // By email, whatever the case it is typed in.
    let found = s.operator_by_email(&email(" ADMIN@example.COM ")).await;
    assert_eq!(
        found.unwrap(),
        Some((admin.clone(), Some("$argon2id$v=19$admin".to_owned())))
    );
    let found = s.operator_by_email(&email("owner@ops.co")).await;
    assert_eq!(found.unwrap(), Some((owner.clone(), None)));
    assert_eq!(
        s.operator_by_email(&email("nobody@ops.co")).await.unwrap(),
        None
    );

    // Lists: by id, per merchant, by page.
    let all = s.list_operators(None, None, 100).await.unwrap();
    assert_eq!(
        all,
        [admin.clone(), owner.clone(), staff.clone(), other.clone()]
    );
    let ids = |v: Vec<Operator>| v.into_iter().map(|o| o.id).collect::<Vec<_>>();
    let of_m = s.list_operators(Some(m), None, 100).await.unwrap();
    assert_eq!(ids(of_m), [owner.id, staff.id]);
    let first = s.list_operators(None, None, 2).await.unwrap();
    assert_eq!(ids(first), [admin.id, owner.id]);
    let rest = s.list_operators(None, Some(owner.id.get()), 2).await;
    assert_eq!(ids(rest.unwrap()), [staff.id, other.id]);
    let of_m_after = s.list_operators(Some(m), Some(owner.id.get()), 2).await;
    assert_eq!(ids(of_m_after.unwrap()), [staff.id]);

    // One address, one operator, whatever its case; a merchant must exist.
    let again = draft("STAFF@ops.co", OperatorRole::Support, None);
    assert!(matches!(
        s.insert_operator(&again, None, t0()).await,
        Err(StoreError::Conflict(Conflict::Unique))
    ));
    let ghost = MerchantId::new(n.get() + 100).unwrap();
    let nowhere = draft("ghost@ops.co", OperatorRole::Staff, Some(ghost));
    assert!(matches!(
        s.insert_operator(&nowhere, None, t0()).await,
        Err(StoreError::Conflict(Conflict::Reference))
    ));
    assert_eq!(s.list_operators(None, None, 100).await.unwrap().len(), 4);

    // Edits move the version on; a role stays on its side.
    let renamed = s
        .update_operator(staff.id, Some("Sam"), None, at(1))
        .await
        .unwrap();
    assert_eq!(
        (renamed.name.as_str(), renamed.role, renamed.version),
        ("Sam", OperatorRole::Staff, staff.version + 1)
    );
    assert_eq!((renamed.updated_at, renamed.created_at), (at(1), t0()));
    let promoted = s
        .update_operator(staff.id, None, Some(OperatorRole::Owner), at(2))
        .await
        .unwrap();
    assert_eq!(
        (promoted.name.as_str(), promoted.role, promoted.version),
        ("Sam", OperatorRole::Owner, staff.version + 2)
    );
    let across = s
        .update_operator(admin.id, None, Some(OperatorRole::Staff), at(2))
        .await;
    assert!(across.is_err(), "a platform operator given a merchant role");
    assert_eq!(s.operator(admin.id).await.unwrap(), admin);
    assert!(matches!(
        s.update_operator(missing, Some("x"), None, at(2)).await,
        Err(StoreError::NotFound)
    ));

    // Disabling keeps the first instant; enabling clears it.
    let off = s
        .set_operator_disabled(owner.id, true, at(3))
        .await
        .unwrap();
    assert_eq!(
        (off.disabled_at, off.updated_at, off.version),
        (Some(at(3)), at(3), owner.version + 1)
    );
    let still = s
        .set_operator_disabled(owner.id, true, at(4))
        .await
        .unwrap();
    assert_eq!(still, off, "disabling again changes nothing");
    let on = s
        .set_operator_disabled(owner.id, false, at(5))
        .await
        .unwrap();
    assert_eq!(
        (on.disabled_at, on.updated_at, on.version),
        (None, at(5), owner.version + 2)
    );
    assert!(matches!(
        s.set_operator_disabled(missing, true, at(5)).await,
        Err(StoreError::NotFound)
    ));
}

pub async fn operators_lose_their_sessions_when_disabled_or_their_password_changes(
    s: Arc<dyn Store>,
) {
    let a = platform_operator(&s, "a@ops.co").await;
    let b = platform_operator(&s, "b@ops.co").await;
    let (sa, sb, key) = ([1; 32], [2; 32], [3; 32]);
    s.insert_console_session(&sa, &session(Some(a.id), "ta"))
        .await
        .unwrap();
    s.insert_console_session(&sb, &session(Some(b.id), "tb"))
        .await
        .unwrap();
    s.insert_console_session(&key, &session(None, "tk"))
        .await
        .unwrap();
    let found = s.console_session(&sa, at(1)).await.unwrap();
    assert_eq!(found, Some(session(Some(a.id), "ta")));
    assert_eq!(
        s.console_session(&key, at(1)).await.unwrap(),
        Some(session(None, "tk"))
    );

    s.set_operator_disabled(a.id, true, at(1)).await.unwrap();
    assert_eq!(
        s.console_session(&sa, at(1)).await.unwrap(),
        None,
        "disabled"
    );
    assert!(s.console_session(&sb, at(1)).await.unwrap().is_some());
    assert!(s.console_session(&key, at(1)).await.unwrap().is_some());

    s.set_operator_disabled(a.id, false, at(2)).await.unwrap();
    let sa2 = [4; 32];
    s.insert_console_session(&sa2, &session(Some(a.id), "ta2"))
        .await
        .unwrap();
    s.set_operator_password(a.id, "$argon2id$new", at(3))
        .await
        .unwrap();
    assert_eq!(
        s.console_session(&sa2, at(3)).await.unwrap(),
        None,
        "password changed"
    );
    assert!(s.console_session(&sb, at(3)).await.unwrap().is_some());
    assert!(s.console_session(&key, at(3)).await.unwrap().is_some());
    let (after, hash) = s
        .operator_by_email(&email("A@ops.co"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(hash.as_deref(), Some("$argon2id$new"));
    assert_eq!(
        (after.has_password, after.updated_at, after.version),
        (true, at(3), a.version + 3)
    );
    let missing = OperatorId::new(b.id.get() + 100).unwrap();
    assert!(matches!(
        s.set_operator_password(missing, "$x", at(3)).await,
        Err(StoreError::NotFound)
    ));
}

pub async fn operators_password_resets_work_once(s: Arc<dyn Store>) {
    let a = platform_operator(&s, "a@ops.co").await;
    let b = platform_operator(&s, "b@ops.co").await;
    let (once, expired, dropped, raced) = ([1; 32], [2; 32], [3; 32], [4; 32]);
    s.insert_password_reset(&once, a.id, at(2)).await.unwrap();
    s.insert_password_reset(&expired, b.id, at(1))
        .await
        .unwrap();
    assert_eq!(
        s.take_password_reset(&once, at(1)).await.unwrap(),
        Some(a.id)
    );
    assert_eq!(
        s.take_password_reset(&once, at(1)).await.unwrap(),
        None,
        "used"
    );
    assert_eq!(
        s.take_password_reset(&expired, at(1)).await.unwrap(),
        None,
        "expired"
    );
    assert_eq!(s.take_password_reset(&[9; 32], t0()).await.unwrap(), None);
    let missing = OperatorId::new(b.id.get() + 100).unwrap();
    assert!(matches!(
        s.insert_password_reset(&[5; 32], missing, at(2)).await,
        Err(StoreError::Conflict(Conflict::Reference))
    ));

    // A password set another way makes the operator's pending links useless.
    s.insert_password_reset(&dropped, b.id, at(5))
        .await
        .unwrap();
    s.set_operator_password(b.id, "$argon2id$b", at(1))
        .await
        .unwrap();
    assert_eq!(s.take_password_reset(&dropped, at(1)).await.unwrap(), None);

    // Of takes racing for one token, one gets it.
    s.insert_password_reset(&raced, a.id, at(5)).await.unwrap();
    let mut joins = Vec::new();
    for _ in 0..6 {
        let s = s.clone();
        joins.push(tokio::spawn(async move {
            s.take_password_reset(&raced, at(1)).await
        }));
    }
    let mut taken = Vec::new();
    for j in joins {
        taken.extend(j.await.unwrap().unwrap());
    }
    assert_eq!(taken, [a.id], "one take wins");
}
