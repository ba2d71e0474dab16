//! Where users can be reached and what they chose: the order service sets a user's contact
//! points and may set their choices; a user reads and sets their own; an email's unsubscribe
//! link turns a channel's marketing off for the user it was signed for. Every change is in the
//! audit trail with the fields that differ.

use std::collections::BTreeMap;

use coupond_domain::messaging::{Channel, Contact, ContactDraft, MessageKind, Preferences};
use coupond_domain::{Area, DomainError, Timestamp, UserId};
use coupond_store::audit::{self, Change};
use coupond_store::ContactRecord;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::caller::{roles, Access};
use crate::context::App;
use crate::error::{AppError, AppResult};

/// Who may read a user's contact points and choices: the platform and the order service.
pub const READ: Access = Access {
    roles: roles::PLATFORM_SERVICE,
    area: Area::Read,
};

/// Who may set them: the platform's support and the order service.
pub const WRITE: Access = Access {
    roles: roles::PLATFORM_SERVICE,
    area: Area::Support,
};

/// Who may read their own choices: the user.
pub const OWN_READ: Access = Access {
    roles: roles::USER,
    area: Area::Read,
};

/// Who may set their own choices: the user.
pub const OWN_WRITE: Access = Access {
    roles: roles::USER,
    area: Area::Campaigns,
};

/// Choices per channel: `{"email": {"coupon_expiring": false, "campaign": false}}`. A marketing
/// kind not named is on; service kinds (`coupon_revoked`, enrollments) are not a choice.
pub type Choices = BTreeMap<String, BTreeMap<String, bool>>;

/// What a user chose, per channel: the marketing kinds turned on (`true`) or off (`false`); a
/// kind not named is on. The whole set is replaced.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChoicesBody {
    #[serde(default)]
    pub email: Option<KindChoices>,
    #[serde(default)]
    pub sms: Option<KindChoices>,
}

/// One channel's choices. Naming a service kind (a revoke, an enrollment's decision) is 422
/// `service_message`: those always go.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KindChoices {
    pub coupon_issued: Option<bool>,
    pub coupon_claimed: Option<bool>,
    pub coupon_expiring: Option<bool>,
    pub campaign: Option<bool>,
    pub coupon_revoked: Option<bool>,
    pub enrollment_approved: Option<bool>,
    pub enrollment_rejected: Option<bool>,
}

impl KindChoices {
    fn named(&self) -> BTreeMap<String, bool> {
        [
            ("coupon_issued", self.coupon_issued),
            ("coupon_claimed", self.coupon_claimed),
            ("coupon_expiring", self.coupon_expiring),
            ("campaign", self.campaign),
            ("coupon_revoked", self.coupon_revoked),
            ("enrollment_approved", self.enrollment_approved),
            ("enrollment_rejected", self.enrollment_rejected),
        ]
        .into_iter()
        .filter_map(|(k, on)| Some((k.to_owned(), on?)))
        .collect()
    }
}

impl ChoicesBody {
    /// The choices named, per channel.
    pub fn into_choices(self) -> Choices {
        [("email", self.email), ("sms", self.sms)]
            .into_iter()
            .filter_map(|(c, k)| Some((c.to_owned(), k?.named())))
            .collect()
    }
}

/// A user's contact points and choices.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ContactView {
    pub user_id: UserId,
    pub email: Option<String>,
    /// E.164.
    pub phone: Option<String>,
    pub locale: Option<String>,
    pub time_zone: Option<String>,
    #[schema(value_type = Object)]
    pub preferences: Choices,
    /// Absent for a user coupond knows nothing of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Timestamp>,
}

/// A user's own choices.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PreferencesView {
    #[schema(value_type = Object)]
    pub preferences: Choices,
}

/// The choices `p` holds, per channel.
pub fn choices(p: &Preferences) -> Choices {
    p.choices()
        .iter()
        .map(|(c, kinds)| {
            let k = kinds
                .iter()
                .map(|(k, on)| (k.as_str().to_owned(), *on))
                .collect();
            (c.as_str().to_owned(), k)
        })
        .collect()
}

impl ContactView {
    /// `user`'s record as a view (empty when coupond knows nothing of them).
    pub fn of(user: &UserId, r: Option<ContactRecord>) -> Self {
        let (c, p, at) = match r {
            Some(r) => (r.contact, r.preferences, Some(r.updated_at)),
            None => (Contact::default(), Preferences::default(), None),
        };
        ContactView {
            user_id: user.clone(),
            email: c.email.map(|e| e.as_str().to_owned()),
            phone: c.phone.map(|p| p.as_str().to_owned()),
            locale: c.locale.map(|l| l.as_str().to_owned()),
            time_zone: c.zone.map(|z| z.name().to_owned()),
            preferences: choices(&p),
            updated_at: at,
        }
    }
}

/// `body` as checked choices; a channel or kind coupond does not know is named.
fn parse_choices(body: Choices) -> Result<Preferences, DomainError> {
    let mut out = BTreeMap::new();
    for (channel, kinds) in body {
        let c = Channel::parse(&channel).ok_or_else(|| {
            DomainError::invalid(&channel, "unknown_channel", "must be email or sms")
        })?;
        let mut k = BTreeMap::new();
        for (kind, on) in kinds {
            let field = format!("{channel}.{kind}");
            let parsed = MessageKind::parse(&kind).ok_or_else(|| {
                DomainError::invalid(&field, "unknown_kind", "not a message kind")
            })?;
            k.insert(parsed, on);
        }
        out.insert(c, k);
    }
    Preferences::new(out)
}

impl App {
    /// `user`'s contact points and choices (empty when coupond knows nothing of them).
    pub async fn contact(&self, user: &UserId) -> AppResult<ContactView> {
        let r = self.store().contact(user).await?;
        Ok(ContactView::of(user, r))
    }

    /// Sets `user`'s contact points; a field left out is cleared, the choices are kept.
    pub async fn put_contact(&self, user: &UserId, draft: ContactDraft) -> AppResult<ContactView> {
        let contact = Contact::try_from(draft)?;
        let (now, before) = (self.now(), self.store().contact(user).await?);
        let after = ContactRecord {
            user_id: user.clone(),
            contact: contact.clone(),
            preferences: before
                .as_ref()
                .map(|b| b.preferences.clone())
                .unwrap_or_default(),
            updated_at: now,
        };
        let change = contact_change("user.contact", user, before, after, now);
        let write = self.store().put_contact(user, &contact, now);
        let r = audit::change(change, write).await?;
        Ok(ContactView::of(user, Some(r)))
    }

    /// Replaces `user`'s choices with `body`'s (a channel or kind coupond does not know, or a
    /// service kind, is named).
    pub async fn put_preferences(&self, user: &UserId, body: Choices) -> AppResult<ContactView> {
        let prefs = parse_choices(body)?;
        let r = self.set_preferences(user, prefs).await?;
        Ok(ContactView::of(user, Some(r)))
    }

    /// `user`'s own choices.
    pub async fn own_preferences(&self, user: &UserId) -> AppResult<PreferencesView> {
        let r = self.store().contact(user).await?;
        let prefs = r.map(|r| r.preferences).unwrap_or_default();
        Ok(PreferencesView {
            preferences: choices(&prefs),
        })
    }

    /// Replaces `user`'s own choices.
    pub async fn put_own_preferences(
        &self,
        user: &UserId,
        body: Choices,
    ) -> AppResult<PreferencesView> {
        let r = self.set_preferences(user, parse_choices(body)?).await?;
        Ok(PreferencesView {
            preferences: choices(&r.preferences),
        })
    }

    /// The user and channel of unsubscribe link `token`, if coupond signed it.
    pub fn unsubscribe_link(&self, token: &str) -> AppResult<(UserId, Channel)> {
        self.unsubscribe()
            .check(token)
            .ok_or_else(|| AppError::bad_query("token", "this unsubscribe link is not valid"))
    }

    /// Turns every marketing message of link `token`'s channel off for its user, who acts
    /// (the link is signed for them); repeating it changes nothing.
    pub async fn unsubscribe_by_link(
        &self,
        token: &str,
        request_id: Option<String>,
    ) -> AppResult<Channel> {
        let (user, channel) = self.unsubscribe_link(token)?;
        let stored = self.store().contact(&user).await?;
        let mut prefs = stored.map(|r| r.preferences).unwrap_or_default();
        prefs.unsubscribe(channel);
        let ctx = audit::Context {
            who: audit::Who::User(user.clone()),
            request_id,
            client: None,
        };
        audit::acting(ctx, self.set_preferences(&user, prefs)).await?;
        Ok(channel)
    }

    /// Replaces `user`'s choices with `prefs`, recorded in the audit trail.
    async fn set_preferences(&self, user: &UserId, prefs: Preferences) -> AppResult<ContactRecord> {
        let (now, before) = (self.now(), self.store().contact(user).await?);
        let after = ContactRecord {
            user_id: user.clone(),
            contact: before
                .as_ref()
                .map(|b| b.contact.clone())
                .unwrap_or_default(),
            preferences: prefs.clone(),
            updated_at: now,
        };
        let change = contact_change("user.preferences", user, before, after, now);
        let write = self.store().put_preferences(user, &prefs, now);
        Ok(audit::change(change, write).await?)
    }
}

/// The audit trail's entry for `user`'s contact points or choices going from `before` to
/// `after`: the fields that differ (who changed a user's address, and to what).
fn contact_change(
    action: &'static str,
    user: &UserId,
    before: Option<ContactRecord>,
    after: ContactRecord,
    now: Timestamp,
) -> Change {
    let state = |r: Option<ContactRecord>| {
        let mut v = serde_json::to_value(ContactView::of(user, r)).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.remove("user_id");
            o.remove("updated_at");
        }
        v
    };
    Change::new(action, "user", now)
        .object_key(user.as_str())
        .before(&state(before))
        .after(&state(Some(after)))
        .only_differences()
}
