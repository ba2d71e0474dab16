//! The audit trail as a caller reads it, newest first. The platform reads every entry; a
//! merchant (its key, its owners) reads its own merchant's, with any actor not its own shown
//! as "the platform" (no name, client or request id). Entries are written by the
//! transactions of the changes themselves (`coupond_store::audit`); nothing here changes or
//! deletes one.

use coupond_domain::csv::CsvWriter;
use coupond_domain::{Area, Timestamp};
use coupond_store::audit::{AuditEntry, AuditQuery};

use crate::caller::{roles, Access, Principal};
use crate::context::App;
use crate::error::{AppError, AppResult};
use crate::pages::{finish, PageOf, PageRequest};

/// Who may read the audit trail: the platform's and merchants' admins (a merchant its own).
pub const READ: Access = Access {
    roles: roles::PLATFORM_MERCHANT,
    area: Area::Admin,
};

/// The longest `actor` filter.
const MAX_ACTOR: usize = 300;

/// Which entries.
#[derive(Clone, Debug, Default)]
pub struct AuditFilter {
    /// One object, `<kind>:<id>` (`template:5`, `user:<id>`, `order:<order id>`).
    pub object: Option<String>,
    /// Who: an actor (`operator:5`, `key:3`, ...), an operator's email or a key's label.
    pub actor: Option<String>,
    /// Only entries at or after this instant.
    pub since: Option<Timestamp>,
}

impl App {
    /// A page of the trail `filter` picks, newest first, as `p` may read it.
    pub async fn audit_trail(
        &self,
        p: &Principal,
        filter: AuditFilter,
        page: PageRequest,
    ) -> AppResult<PageOf<AuditEntry>> {
        if let Some(o) = &filter.object {
            check_object(o)?;
        }
        if filter
            .actor
            .as_ref()
            .is_some_and(|a| a.is_empty() || a.len() > MAX_ACTOR)
        {
            let why = format!("actor is 1 to {MAX_ACTOR} bytes");
            return Err(AppError::bad_query("actor", why));
        }
        let page = page.page(self.settings())?;
        let own = match p.merchant() {
            Some(m) => Some(OwnActors::of(self, m).await?),
            None => None,
        };
        // A merchant names only its own people and keys: any other name finds nothing, so the
        // filter cannot tell which emails or labels act for the platform.
        let foreign = match (&own, &filter.actor) {
            (Some(own), Some(a)) => !own.names(a),
            _ => false,
        };
        let query = AuditQuery {
            object: filter.object,
            actor: filter.actor,
            since: filter.since,
            merchant: p.merchant(),
            before_id: page.after,
            limit: page.limit,
        };
        let mut rows = if foreign {
            Vec::new()
        } else {
            self.store().audit_entries(&query).await?
        };
        if let Some(own) = &own {
            rows.iter_mut().for_each(|e| own.redact(e));
        }
        Ok(finish(rows, page, |e| e.id, |e| e))
    }
}

/// `<kind>:<id>`: a kind of lowercase letters and `_`, a positive id (a user's id for
/// `user`, a tag for `tag`, an order's id for `order`).
fn check_object(o: &str) -> AppResult<()> {
    let ok = o.split_once(':').is_some_and(|(kind, id)| {
        let named = match kind {
            "user" => coupond_domain::UserId::parse(id).is_ok(),
            "tag" => coupond_domain::Tag::parse(id).is_ok(),
            "order" => coupond_domain::OrderId::parse(id).is_ok(),
            _ => id.parse::<i64>().is_ok_and(|id| id > 0) && !id.starts_with('+'),
        };
        (1..=32).contains(&kind.len())
            && kind.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
            && named
    });
    if ok {
        Ok(())
    } else {
        Err(AppError::bad_query(
            "object",
            "object is <kind>:<id>, as template:5 (user:<user id>, tag:<tag>, order:<order id>)",
        ))
    }
}

/// The actors that are a merchant's own: its people (`operator:N`, by email too) and its keys
/// (`key:N`, by label too). A merchant reads every other actor's entries about its objects as
/// the platform's, without who, from where or under which request: the platform's staff and
/// systems are its own business.
struct OwnActors {
    actors: std::collections::HashSet<String>,
    names: std::collections::HashSet<String>,
}

impl OwnActors {
    /// The most people and keys of one merchant read to tell its own actors.
    const MAX: u32 = 1_000;

    async fn of(s: &App, m: coupond_domain::MerchantId) -> AppResult<OwnActors> {
        let mut own = OwnActors {
            actors: Default::default(),
            names: Default::default(),
        };
        for op in s.store().list_operators(Some(m), None, Self::MAX).await? {
            own.actors.insert(format!("operator:{}", op.id));
            own.names.insert(op.email.to_string());
        }
        for k in s.store().list_api_keys().await? {
            if k.merchant_id == Some(m) {
                own.actors.insert(format!("key:{}", k.id));
                own.names.insert(k.label);
            }
        }
        Ok(own)
    }

    /// Whether `actor` (an actor or a name, as the filter takes it) is the merchant's own.
    fn names(&self, actor: &str) -> bool {
        self.actors.contains(actor) || self.names.contains(actor)
    }

    /// `e` as the merchant may read it.
    fn redact(&self, e: &mut AuditEntry) {
        if self.actors.contains(&e.actor) || e.actor.starts_with("system:") {
            return;
        }
        e.actor = "platform".to_owned();
        e.actor_name = "the platform".to_owned();
        e.request_id = None;
        e.client = None;
    }
}

/// Entries as CSV, their header line first.
pub fn entries_csv(entries: &[AuditEntry]) -> String {
    let mut w = CsvWriter::with_header(&[
        "id",
        "at",
        "actor",
        "actor_name",
        "action",
        "object",
        "merchant_id",
        "before",
        "after",
        "request_id",
        "client",
    ]);
    let json = |v: &Option<serde_json::Value>| v.as_ref().map(|v| v.to_string());
    for e in entries {
        w.number(e.id)
            .text(&e.at.to_string())
            .text(&e.actor)
            .text(&e.actor_name)
            .text(&e.action)
            .text(&e.object)
            .optional_number(e.merchant_id.map(|m| m.get()))
            .optional(json(&e.before).as_deref())
            .optional(json(&e.after).as_deref())
            .optional(e.request_id.as_deref())
            .optional(e.client.as_deref())
            .end_line();
    }
    w.finish()
}
