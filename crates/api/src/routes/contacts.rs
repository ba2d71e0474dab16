//! Where users can be reached and what they chose: the service sets a user's contact points
//! (`PUT /v1/users/{id}/contact`) and may set their choices; a user reads and sets their own
//! (`/v1/me/preferences`); an email's unsubscribe link (`/unsubscribe?token=`) turns a
//! channel's marketing off without signing in.

use axum::extract::State;
use axum::response::{Html, IntoResponse, Response};
use axum::{Extension, Json};
use coupond_domain::messaging::{Channel, ContactDraft};
use coupond_domain::UserId;
use serde::Deserialize;
use utoipa::IntoParams;

pub use coupond_app::contacts::{Choices, ChoicesBody, ContactView, KindChoices, PreferencesView};

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::routes::{BodyErrors, CommonErrors};
use crate::state::AppState;

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
    Ok(Json(s.put_contact(&user, body).await?))
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
    Ok(Json(s.contact(&user).await?))
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
    Ok(Json(s.put_preferences(&user, body.into_choices()).await?))
}

/// Your message choices.
#[utoipa::path(operation_id = "my_preferences", get, path = "/v1/me/preferences", tag = "messages",
    responses((status = 200, description = "Your choices", body = PreferencesView), CommonErrors),
    security(("bearer" = [])))]
pub async fn my_preferences(
    Extension(p): Extension<Principal>,
    State(s): State<AppState>,
) -> ApiResult<Json<PreferencesView>> {
    Ok(Json(s.own_preferences(p.me()?).await?))
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
    Ok(Json(
        s.put_own_preferences(p.me()?, body.into_choices()).await?,
    ))
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
    let (_, channel) = s.unsubscribe_link(&q.token)?;
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
    let request_id = crate::observe::current_request_id();
    let channel = s.unsubscribe_by_link(&q.token, request_id).await?;
    let what = channel_words(channel);
    Ok(Html(format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Unsubscribed</title></head><body>\
         <h1>Unsubscribed</h1><p>You will no longer get offers and reminders by {what}.</p></body></html>"
    ))
    .into_response())
}

fn channel_words(c: Channel) -> &'static str {
    match c {
        Channel::Sms => "text message",
        _ => "email",
    }
}
