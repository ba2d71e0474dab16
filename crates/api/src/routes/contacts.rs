//! Where users can be reached and what they chose: the service sets a user's contact points
//! (`PUT /v1/users/{id}/contact`) and may set their choices; a user reads and sets their own
//! (`/v1/me/preferences`); an email's unsubscribe link (`/unsubscribe?token=`) turns a
//! channel's marketing off without signing in.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::response::{Html, IntoResponse, Response};
use axum::{Extension, Json};
use coupond_domain::messaging::{Channel, Contact, ContactDraft, MessageKind, Preferences};
use coupond_domain::{DomainError, Timestamp, UserId};
use coupond_store::audit::{self, Change};
use coupond_store::ContactRecord;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::routes::{BodyErrors, CommonErrors};
use crate::state::AppState;

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
    fn into_choices(self) -> Choices {
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

fn choices(p: &Preferences) -> Choices {
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
    fn of(user: &UserId, r: Option<ContactRecord>) -> Self {
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

/// Set a user's contact points.
///
/// The service says where a user can be reached: an email address, an E.164 phone number, the
/// locale texts are chosen by and the user's IANA time zone. A field left out is cleared; the
/// user's choices are kept.
#[utoipa::path(operation_id = "put_user_contact", put, path = "/v1/users/{id}/contact", tag = "messages",
    params(("id" = String, Path, description = "User id")),
    request_body = ContactDraft,
    responses((status = 200, description = "The user's contact points and choices", body = ContactView),
        CommonErrors, BodyErrors),
    security(("bearer" = [])))]
pub async fn put_contact(
    State(s): State<AppState>,
    ApiPath(user): ApiPath<UserId>,
    ApiJson(body): ApiJson<ContactDraft>,
) -> ApiResult<Json<ContactView>> {
    let contact = Contact::try_from(body)?;
    let (now, before) = (s.now(), s.store().contact(&user).await?);
    let after = ContactRecord {
        user_id: user.clone(),
        contact: contact.clone(),
        preferences: before
            .as_ref()
            .map(|b| b.preferences.clone())
            .unwrap_or_default(),
        updated_at: now,
    };
    let change = contact_change("user.contact", &user, before, after, now);
    let write = s.store().put_contact(&user, &contact, now);
    let r = audit::change(change, write).await?;
    Ok(Json(ContactView::of(&user, Some(r))))
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

/// Replaces `user`'s choices with `prefs`, recorded in the audit trail.
async fn set_preferences(
    s: &AppState,
    user: &UserId,
    prefs: Preferences,
) -> ApiResult<ContactRecord> {
    let (now, before) = (s.now(), s.store().contact(user).await?);
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
    let write = s.store().put_preferences(user, &prefs, now);
    Ok(audit::change(change, write).await?)
}

/// Read a user's contact points and choices.
#[utoipa::path(operation_id = "get_user_contact", get, path = "/v1/users/{id}/contact", tag = "messages",
    params(("id" = String, Path, description = "User id")),
    responses((status = 200, description = "The user's contact points and choices (empty when unknown)", body = ContactView),
        CommonErrors),
    security(("bearer" = [])))]
pub async fn get_contact(
    State(s): State<AppState>,
    ApiPath(user): ApiPath<UserId>,
) -> ApiResult<Json<ContactView>> {
    let r = s.store().contact(&user).await?;
    Ok(Json(ContactView::of(&user, r)))
}

/// Set a user's choices.
///
/// Which marketing messages the user gets by email and SMS (`{"email": {"campaign": false}}`);
/// the whole set is replaced. Service messages cannot be turned off: naming one is 422
/// `service_message`.
#[utoipa::path(operation_id = "put_user_preferences", put, path = "/v1/users/{id}/preferences", tag = "messages",
    params(("id" = String, Path, description = "User id")),
    request_body = ChoicesBody,
    responses((status = 200, description = "The user's contact points and choices", body = ContactView),
        CommonErrors, BodyErrors),
    security(("bearer" = [])))]
pub async fn put_preferences(
    State(s): State<AppState>,
    ApiPath(user): ApiPath<UserId>,
    ApiJson(body): ApiJson<ChoicesBody>,
) -> ApiResult<Json<ContactView>> {
    let p = parse_choices(body.into_choices())?;
    let r = set_preferences(&s, &user, p).await?;
    Ok(Json(ContactView::of(&user, Some(r))))
}

/// Your message choices.
#[utoipa::path(operation_id = "my_preferences", get, path = "/v1/me/preferences", tag = "messages",
    responses((status = 200, description = "Your choices", body = PreferencesView), CommonErrors),
    security(("bearer" = [])))]
pub async fn my_preferences(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
) -> ApiResult<Json<PreferencesView>> {
    let r = s.store().contact(p.me()?).await?;
    let prefs = r.map(|r| r.preferences).unwrap_or_default();
    Ok(Json(PreferencesView {
        preferences: choices(&prefs),
    }))
}

/// Set your message choices.
///
/// Which marketing messages you get by email and SMS; the whole set is replaced.
#[utoipa::path(operation_id = "put_my_preferences", put, path = "/v1/me/preferences", tag = "messages",
    request_body = ChoicesBody,
    responses((status = 200, description = "Your choices", body = PreferencesView), CommonErrors, BodyErrors),
    security(("bearer" = [])))]
pub async fn put_my_preferences(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
    ApiJson(body): ApiJson<ChoicesBody>,
) -> ApiResult<Json<PreferencesView>> {
    let prefs = parse_choices(body.into_choices())?;
    let r = set_preferences(&s, p.me()?, prefs).await?;
    Ok(Json(PreferencesView {
        preferences: choices(&r.preferences),
    }))
}

/// The token of an unsubscribe link.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UnsubscribeQuery {
    /// The token from the email's link.
    pub token: String,
}

/// Confirm unsubscribing.
///
/// The page an email's unsubscribe link opens: it asks before changing anything (mail
/// scanners follow links), with a button that posts back.
#[utoipa::path(get, path = "/unsubscribe", tag = "messages", params(UnsubscribeQuery),
    responses((status = 200, description = "A page asking to confirm", content_type = "text/html"),
        (status = 400, description = "Not a link coupond made", body = crate::error::Problem, content_type = "application/problem+json")))]
pub async fn unsubscribe_page(
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<UnsubscribeQuery>,
) -> ApiResult<Response> {
    let (_, channel) = check_token(&s, &q.token)?;
    let what = channel_words(channel);
    // The token is base64url and dots only (checked above): safe inside the attribute.
    Ok(Html(format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Unsubscribe</title></head><body>\
         <h1>Stop {what}?</h1><p>You will no longer get offers and reminders by {what}. Messages \
         about coupons you hold (a coupon withdrawn) still reach you.</p>\
         <form method=\"post\" action=\"/unsubscribe?token={}\"><button type=\"submit\">Unsubscribe</button></form>\
         </body></html>",
        q.token
    ))
    .into_response())
}

/// Unsubscribe.
///
/// Turns every marketing message of the link's channel off for the link's user: the button of
/// the page above, or a mail client's one-click unsubscribe (RFC 8058). Repeating it changes
/// nothing.
#[utoipa::path(post, path = "/unsubscribe", tag = "messages", params(UnsubscribeQuery),
    responses((status = 200, description = "Unsubscribed", content_type = "text/html"),
        (status = 400, description = "Not a link coupond made", body = crate::error::Problem, content_type = "application/problem+json")))]
pub async fn unsubscribe(
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<UnsubscribeQuery>,
) -> ApiResult<Response> {
    let (user, channel) = check_token(&s, &q.token)?;
    let mut prefs = s
        .store()
        .contact(&user)
        .await?
        .map(|r| r.preferences)
        .unwrap_or_default();
    prefs.unsubscribe(channel);
    // The link's holder acts as its user (the link is signed for them).
    let ctx = audit::Context {
        who: audit::Who::User(user.clone()),
        request_id: crate::observe::current_request_id(),
        client: None,
    };
    audit::acting(ctx, set_preferences(&s, &user, prefs)).await?;
    let what = channel_words(channel);
    Ok(Html(format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Unsubscribed</title></head><body>\
         <h1>Unsubscribed</h1><p>You will no longer get offers and reminders by {what}.</p></body></html>"
    ))
    .into_response())
}

fn check_token(s: &AppState, token: &str) -> ApiResult<(UserId, Channel)> {
    s.unsubscribe().check(token).ok_or_else(|| {
        ApiError::bad_request(
            "invalid_token",
            Some("token"),
            "this unsubscribe link is not valid",
        )
    })
}

fn channel_words(c: Channel) -> &'static str {
    match c {
        Channel::Sms => "text message",
        _ => "email",
    }
}
