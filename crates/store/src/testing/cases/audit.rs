//! The audit trail (issue 32) on every backend: a change's entry commits with it, as who is
//! acting, naming the object a creating write made; a write that fails records nothing; reads
//! filter by object, actor (or its name), merchant and time, newest first, paged. And the
//! operators' second factor: one code's time step signs in once.

use super::*;
use crate::audit::{self, AuditQuery, Change, Context, Who};
use coupond_domain::{Email, OperatorDraft, OperatorId, OperatorRole};

fn as_ada() -> Context {
    Context {
        who: Who::Operator {
            id: OperatorId::new(9).unwrap(),
            email: "ada@example.com".into(),
            role: OperatorRole::Admin,
        },
        request_id: Some("req-1".into()),
        client: Some("203.0.113.7".into()),
    }
}

fn query() -> AuditQuery {
    AuditQuery {
        limit: 50,
        ..AuditQuery::default()
    }
}

pub async fn audit_entries_commit_with_their_change(s: Arc<dyn Store>) {
    let create = Change::new("merchant.create", "merchant", t0()).after(&"Lakeside");
    let m = audit::acting(as_ada(), async {
        audit::change(create, s.insert_merchant(&merchant("Lakeside", &[1]), t0())).await
    })
    .await
    .unwrap();
    // A write that fails (an email taken) commits nothing, so records nothing.
    let d = OperatorDraft::new(
        Email::parse("x@example.com").unwrap(),
        "X".into(),
        OperatorRole::Admin,
        None,
    )
    .unwrap();
    s.insert_operator(&d, None, t0()).await.unwrap();
    let again = Change::new("operator.create", "operator", at(1));
    let refused = audit::change(again, s.insert_operator(&d, None, at(1))).await;
    assert!(refused.is_err());
    // Without anyone acting, coupond itself is named.
    let edit = Change::new("merchant.update", "merchant", at(2))
        .object(m.id.get())
        .merchant(Some(m.id));
    let other = merchant("Lakeside Flats", &[1]);
    audit::change(edit, s.update_merchant(m.id, &m.draft(), &other))
        .await
        .unwrap();

    let all = s.audit_entries(&query()).await.unwrap();
    let actions: Vec<&str> = all.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(actions, ["merchant.update", "merchant.create"]);
    let created = &all[1];
    assert_eq!(created.object, format!("merchant:{}", m.id));
    assert_eq!(
        (created.actor.as_str(), created.actor_name.as_str()),
        ("operator:9", "ada@example.com")
    );
    assert_eq!(created.after, Some(serde_json::json!("Lakeside")));
    assert_eq!(created.request_id.as_deref(), Some("req-1"));
    assert_eq!(created.client.as_deref(), Some("203.0.113.7"));
    assert_eq!(created.at, t0());
    assert_eq!(all[0].actor, "system:coupond");
    assert_eq!(all[0].merchant_id, Some(m.id));

    let by = |q: AuditQuery| {
        let s = s.clone();
        async move { s.audit_entries(&q).await.unwrap().len() }
    };
    let actor = |a: &str| AuditQuery {
        actor: Some(a.into()),
        ..query()
    };
    assert_eq!(by(actor("ada@example.com")).await, 1);
    assert_eq!(by(actor("operator:9")).await, 1);
    assert_eq!(by(actor("operator:8")).await, 0);
    let since = AuditQuery {
        since: Some(at(2)),
        ..query()
    };
    assert_eq!(by(since).await, 1);
    let mine = AuditQuery {
        merchant: Some(m.id),
        ..query()
    };
    assert_eq!(by(mine).await, 1, "only the update names the merchant");
    let page = AuditQuery {
        before_id: Some(all[0].id),
        limit: 1,
        ..query()
    };
    let older = s.audit_entries(&page).await.unwrap();
    assert_eq!(older.len(), 1);
    assert_eq!(older[0].id, all[1].id);
}

pub async fn operators_second_factor_steps_are_used_once(s: Arc<dyn Store>) {
    let d = OperatorDraft::new(
        Email::parse("ada@example.com").unwrap(),
        "Ada".into(),
        OperatorRole::Admin,
        None,
    )
    .unwrap();
    let op = s.insert_operator(&d, Some("$hash"), t0()).await.unwrap();
    assert!(!op.has_totp);
    assert!(
        !s.use_totp_step(op.id, 5).await.unwrap(),
        "no secret, no step"
    );
    let on = s
        .set_operator_totp(op.id, Some("JBSWY3DPEHPK3PXP"), t0())
        .await;
    let on = on.unwrap();
    assert!(on.has_totp && on.version > op.version);
    assert_eq!(
        s.operator_totp(op.id).await.unwrap().as_deref(),
        Some("JBSWY3DPEHPK3PXP")
    );
    assert!(s.use_totp_step(op.id, 5).await.unwrap());
    assert!(
        !s.use_totp_step(op.id, 5).await.unwrap(),
        "a step works once"
    );
    assert!(
        !s.use_totp_step(op.id, 4).await.unwrap(),
        "and no earlier one"
    );
    assert!(s.use_totp_step(op.id, 6).await.unwrap());
    let off = s.set_operator_totp(op.id, None, at(1)).await.unwrap();
    assert!(!off.has_totp);
    assert_eq!(s.operator_totp(op.id).await.unwrap(), None);
    let missing = OperatorId::new(999).unwrap();
    assert!(matches!(
        s.set_operator_totp(missing, None, at(1)).await,
        Err(StoreError::NotFound)
    ));
}
