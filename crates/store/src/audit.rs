//! The audit trail (issue 32): who changed what, with the fields before and after, written in
//! the transaction of the change itself, so a change exists if and only if its entry does.
//!
//! Two task-locals carry it there without every store method growing a parameter:
//!
//! - [`acting`] runs a request (or a CLI command, or a worker's pass) as [`Who`], with its
//!   request id and client address. The API's route guard sets it once it knows the caller.
//! - [`change`] runs one write with the [`Change`] it makes. The application layer (the
//!   engine) calls it around the store call, having read the record's state before and
//!   computed the state after; a store write that creates its object names the new id with
//!   [`created`].
//!
//! A backend's transaction takes the pending changes ([`take_pending`]) just before it commits
//! and inserts them in that same transaction. Writes outside a [`change`] (claims, the
//! scheduler's transitions) record nothing here: coupons have their own log, and status
//! transitions their events. The trail is append-only: no store method updates or deletes it.

use std::cell::RefCell;
use std::future::Future;

use async_trait::async_trait;
use coupond_domain::{MerchantId, OperatorId, OperatorRole, Timestamp, UserId};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::StoreResult;

/// Who made a change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Who {
    /// A person with an operator account (console or API session), and their role.
    Operator {
        id: OperatorId,
        email: String,
        role: OperatorRole,
    },
    /// A machine with an API key (its id and label).
    Key { id: i64, label: String },
    /// An end user (through a user token).
    User(UserId),
    /// The command line, as the operating-system user that ran it.
    Cli(String),
    /// coupond itself: the worker or task named.
    System(String),
}

impl Who {
    /// The stored actor: `operator:5`, `key:3`, `user:u-1`, `cli:root`, `system:scheduler`.
    pub fn actor(&self) -> String {
        match self {
            Who::Operator { id, .. } => format!("operator:{id}"),
            Who::Key { id, .. } => format!("key:{id}"),
            Who::User(u) => format!("user:{u}"),
            Who::Cli(user) => format!("cli:{user}"),
            Who::System(worker) => format!("system:{worker}"),
        }
    }

    /// The name a person reads: the operator's email, the key's label.
    pub fn name(&self) -> String {
        match self {
            Who::Operator { email, .. } => email.clone(),
            Who::Key { label, .. } => label.clone(),
            Who::User(u) => u.to_string(),
            Who::Cli(user) => user.clone(),
            Who::System(worker) => worker.clone(),
        }
    }
}

/// Who is acting in this task, and where the request came from.
#[derive(Clone, Debug)]
pub struct Context {
    pub who: Who,
    pub request_id: Option<String>,
    /// The client's address (as a trusted proxy names it, else the peer).
    pub client: Option<String>,
}

/// One change to record: an action on an object, its fields before and after.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// `template.update`, `operator.disable`, ...: `<object kind>.<verb>`.
    pub action: &'static str,
    /// `template`, `activity`, `listing`, `merchant`, `operator`, `api_key`, ...
    pub object_kind: &'static str,
    /// `None` until a creating write names it ([`created`]).
    pub object_id: Option<i64>,
    /// An object named by text rather than a number (a user's id): recorded instead of
    /// `object_id`.
    pub object_key: Option<String>,
    /// The merchant the object belongs to (its owners may read the entry).
    pub merchant: Option<MerchantId>,
    pub before: Option<Value>,
    pub after: Option<Value>,
    pub at: Timestamp,
}

impl Change {
    pub fn new(action: &'static str, object_kind: &'static str, at: Timestamp) -> Self {
        Change {
            action,
            object_kind,
            object_id: None,
            object_key: None,
            merchant: None,
            before: None,
            after: None,
            at,
        }
    }

    pub fn object(mut self, id: i64) -> Self {
        self.object_id = Some(id);
        self
    }

    /// Names the object by text (`user:u-1`, `tag:vip`).
    pub fn object_key(mut self, key: &str) -> Self {
        self.object_key = Some(key.to_owned());
        self
    }

    pub fn merchant(mut self, m: Option<MerchantId>) -> Self {
        self.merchant = m;
        self
    }

    /// The state before, as JSON (a value that does not serialise is recorded as null).
    pub fn before(mut self, v: &impl Serialize) -> Self {
        self.before = serde_json::to_value(v).ok();
        self
    }

    pub fn after(mut self, v: &impl Serialize) -> Self {
        self.after = serde_json::to_value(v).ok();
        self
    }

    /// Keeps in `before` and `after` only the top-level fields that differ, so an entry
    /// shows what changed rather than two whole records.
    pub fn only_differences(mut self) -> Self {
        if let (Some(Value::Object(b)), Some(Value::Object(a))) =
            (&mut self.before, &mut self.after)
        {
            let same: Vec<String> = b
                .iter()
                .filter(|(k, v)| a.get(k.as_str()) == Some(v))
                .map(|(k, _)| k.clone())
                .collect();
            for k in same {
                b.remove(&k);
                a.remove(&k);
            }
        }
        self
    }
}

/// A stored entry of the trail.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub id: i64,
    pub at: Timestamp,
    /// `operator:5`, `key:3`, `user:u-1`, `cli:root`, `system:scheduler`.
    pub actor: String,
    /// The operator's email, the key's label, ...
    pub actor_name: String,
    pub action: String,
    /// `template:5`.
    pub object: String,
    pub merchant_id: Option<MerchantId>,
    pub before: Option<Value>,
    pub after: Option<Value>,
    pub request_id: Option<String>,
    pub client: Option<String>,
}

/// Which entries to read: newest first, each filter optional.
#[derive(Clone, Debug, Default)]
pub struct AuditQuery {
    /// `template:5`.
    pub object: Option<String>,
    /// An actor (`operator:5`) or its name (an email).
    pub actor: Option<String>,
    pub since: Option<Timestamp>,
    /// Only this merchant's entries.
    pub merchant: Option<MerchantId>,
    /// Entries older than this id (the cursor of the previous page).
    pub before_id: Option<i64>,
    pub limit: u32,
}

/// Reads the trail; nothing writes it but the transactions of the changes themselves.
#[async_trait]
pub trait AuditStore: Send + Sync {
    async fn audit_entries(&self, q: &AuditQuery) -> StoreResult<Vec<AuditEntry>>;
}

tokio::task_local! {
    static CONTEXT: Context;
    static PENDING: RefCell<Vec<Change>>;
}

/// Runs `fut` as `ctx`: the changes it makes are recorded as made by `ctx.who`.
pub async fn acting<F: Future>(ctx: Context, fut: F) -> F::Output {
    CONTEXT.scope(ctx, fut).await
}

/// Who is acting in this task, if [`acting`] said.
pub fn current() -> Option<Context> {
    CONTEXT.try_with(Clone::clone).ok()
}

/// Runs the write `fut` with the change it makes: the first transaction `fut` commits
/// records it. If `fut` commits nothing (it failed, or found nothing to change), nothing is
/// recorded.
pub async fn change<F: Future>(c: Change, fut: F) -> F::Output {
    PENDING.scope(RefCell::new(vec![c]), fut).await
}

/// Names the object a creating write just inserted, for the pending changes that do not
/// name one yet. Outside a [`change`], does nothing.
pub fn created(id: i64) {
    let _ = PENDING.try_with(|p| {
        for c in p.borrow_mut().iter_mut().filter(|c| c.object_id.is_none()) {
            c.object_id = Some(id);
        }
    });
}

/// Drops the pending changes: the write found its work done already (an idempotent replay)
/// and changes nothing.
pub fn discard() {
    let _ = PENDING.try_with(|p| p.borrow_mut().clear());
}

/// The changes waiting for the transaction about to commit, with who is acting (coupond
/// itself when nobody said). Backends call this in `commit`.
pub fn take_pending() -> Vec<(Context, Change)> {
    let changes = PENDING
        .try_with(|p| std::mem::take(&mut *p.borrow_mut()))
        .unwrap_or_default();
    if changes.is_empty() {
        return Vec::new();
    }
    let ctx = current().unwrap_or_else(unknown);
    changes.into_iter().map(|c| (ctx.clone(), c)).collect()
}

fn unknown() -> Context {
    Context {
        who: Who::System("coupond".to_owned()),
        request_id: None,
        client: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn differences_keep_only_changed_fields() {
        let c = Change::new(
            "template.update",
            "template",
            Timestamp::from_unix_micros(0).unwrap(),
        )
        .before(&json!({"title": "a", "stock": 5}))
        .after(&json!({"title": "b", "stock": 5}))
        .only_differences();
        assert_eq!(c.before, Some(json!({"title": "a"})));
        assert_eq!(c.after, Some(json!({"title": "b"})));
    }

    #[tokio::test]
    async fn a_change_is_taken_once_with_who_is_acting_and_its_created_id() {
        let ctx = Context {
            who: Who::Cli("root".into()),
            request_id: Some("r1".into()),
            client: None,
        };
        let taken = acting(ctx, async {
            change(
                Change::new(
                    "merchant.create",
                    "merchant",
                    Timestamp::from_unix_micros(1).unwrap(),
                ),
                async {
                    created(7);
                    let first = take_pending();
                    let second = take_pending();
                    (first, second)
                },
            )
            .await
        })
        .await;
        let (first, second) = taken;
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].0.who.actor(), "cli:root");
        assert_eq!(first[0].1.object_id, Some(7));
        assert!(second.is_empty());
        assert!(
            take_pending().is_empty(),
            "outside a change nothing is pending"
        );
    }
}
