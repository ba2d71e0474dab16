//! Webhooks: endpoints that receive coupond's events, signed, with retries, and the log of
//! deliveries with their attempts. The platform's endpoints receive every event; a merchant's
//! those of its templates. A URL is checked against the target policy (no internal addresses
//! unless allowed) when registered, and each owner has at most `max_webhooks_per_owner`
//! enabled.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use coupond_domain::{Area, MerchantId, Timestamp};
use coupond_engine::webhooks::{endpoints, TargetError};
use coupond_store::events::kind;
use coupond_store::{Conflict, Delivery, DeliveryState, NewWebhook, StoreError, Webhook};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::caller::{roles, Access, Principal};
use crate::context::App;
use crate::error::{AppError, AppResult};
use crate::pages::{slice, PageOf, PageRequest};

/// Who may register, disable, delete and test endpoints: the platform's and merchants'
/// admins (a merchant's own).
pub const MANAGE: Access = Access {
    roles: roles::PLATFORM_MERCHANT,
    area: Area::Admin,
};

/// Who may read endpoints and their deliveries.
pub const READ: Access = Access {
    roles: roles::PLATFORM_MERCHANT,
    area: Area::Read,
};

/// What to register.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookBody {
    /// `http://host[:port]/path` (TLS is terminated in front of the receiver for now).
    pub url: String,
    /// Event types (`coupon.claimed`, `coupon.used`, `template.status_changed`, ...), or
    /// `["*"]` for all.
    pub event_types: Vec<String>,
}

/// A registered endpoint.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct WebhookView {
    pub id: i64,
    /// Absent for the platform's endpoints (every event); a merchant's receive the events of
    /// its templates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merchant_id: Option<MerchantId>,
    pub url: String,
    pub event_types: Vec<String>,
    /// Only in the answer to the registration: keep it to verify `Coupond-Signature`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    pub created_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled_at: Option<Timestamp>,
}

impl WebhookView {
    /// `w`, with its secret only in the answer to its registration.
    pub fn new(w: Webhook, with_secret: bool) -> Self {
        WebhookView {
            id: w.id,
            merchant_id: w.merchant_id,
            url: w.url,
            event_types: w.event_types,
            secret: with_secret.then_some(w.secret),
            created_at: w.created_at,
            disabled_at: w.disabled_at,
        }
    }
}

/// One try of a delivery.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AttemptView {
    pub attempt: i64,
    pub at: Timestamp,
    /// The receiver's HTTP status; absent when it did not answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A delivery and its attempts.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DeliveryView {
    pub id: i64,
    pub event_id: i64,
    pub event_type: String,
    /// `pending`, `delivered` or `failed`.
    pub state: String,
    pub created_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<Timestamp>,
    /// While pending: when the next attempt is due.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<Timestamp>,
    pub attempts: Vec<AttemptView>,
}

impl From<Delivery> for DeliveryView {
    fn from(d: Delivery) -> Self {
        DeliveryView {
            id: d.id,
            event_id: d.event_id,
            event_type: d.event_type,
            state: d.state.as_str().to_owned(),
            created_at: d.created_at,
            delivered_at: d.delivered_at,
            next_attempt_at: (d.state == DeliveryState::Pending).then_some(d.next_at),
            attempts: d
                .attempts
                .into_iter()
                .map(|a| AttemptView {
                    attempt: a.attempt,
                    at: a.at,
                    status: a.status,
                    error: a.error,
                })
                .collect(),
        }
    }
}

impl App {
    /// Registers an endpoint of `p` (the platform's receives every event; a merchant's those
    /// of its templates); its secret is in this answer only.
    pub async fn register_webhook(
        &self,
        p: &Principal,
        body: &WebhookBody,
    ) -> AppResult<WebhookView> {
        let url = self.checked_target(body).await?;
        let secret = format!(
            "whsec_{}",
            URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
        );
        let new = NewWebhook {
            merchant_id: p.merchant(),
            url: &url,
            secret: &secret,
            event_types: &body.event_types,
        };
        let max = self.settings().max_webhooks_per_owner;
        let registered = endpoints::register(self.store(), &new, max, self.now()).await;
        let w = registered.map_err(|e| match e {
            StoreError::Conflict(Conflict::Limit) => AppError::conflict(
                "webhook_limit",
                format!("at most {max} enabled webhooks per owner; disable one first"),
            ),
            e => e.into(),
        })?;
        Ok(WebhookView::new(w, true))
    }

    /// A page of `p`'s endpoints (the platform's: all), oldest first.
    pub async fn webhooks(
        &self,
        p: &Principal,
        page: PageRequest,
    ) -> AppResult<PageOf<WebhookView>> {
        let page = page.page(self.settings())?;
        let all = self.store().list_webhooks(p.merchant()).await?;
        Ok(slice(all, page, |w| w.id, |w| WebhookView::new(w, false)))
    }

    /// Endpoint `id`, if `p` may see it.
    pub async fn webhook(&self, p: &Principal, id: i64) -> AppResult<WebhookView> {
        Ok(WebhookView::new(self.visible_webhook(p, id).await?, false))
    }

    /// Stops endpoint `id`: nothing more is delivered to it; queued deliveries fail.
    pub async fn disable_webhook(&self, p: &Principal, id: i64) -> AppResult<WebhookView> {
        let before = self.visible_webhook(p, id).await?;
        let w = endpoints::disable(self.store(), &before, self.now()).await?;
        Ok(WebhookView::new(w, false))
    }

    /// Deletes endpoint `id` with its deliveries and their attempts.
    pub async fn delete_webhook(&self, p: &Principal, id: i64) -> AppResult<()> {
        let w = self.visible_webhook(p, id).await?;
        endpoints::delete(self.store(), &w, self.now()).await?;
        Ok(())
    }

    /// Queues a signed `webhook.ping` delivery to endpoint `id`, due now.
    pub async fn ping_webhook(&self, p: &Principal, id: i64) -> AppResult<DeliveryView> {
        let w = self.visible_webhook(p, id).await?;
        let queued = endpoints::ping(self.store(), &w, self.now()).await;
        let d = queued.map_err(|e| match e {
            StoreError::Conflict(Conflict::Version) => AppError::conflict(
                "webhook_disabled",
                "this endpoint is disabled: nothing is sent to it",
            ),
            e => e.into(),
        })?;
        Ok(DeliveryView::from(d))
    }

    /// A page of endpoint `id`'s deliveries, newest first, each with its attempts (their own
    /// cursor: the page runs backwards).
    pub async fn webhook_deliveries(
        &self,
        p: &Principal,
        id: i64,
        page: PageRequest,
    ) -> AppResult<PageOf<DeliveryView>> {
        self.visible_webhook(p, id).await?;
        let limit = page.rows(self.settings())?;
        let before = page.own_cursor(delivery_cursor)?;
        let mut rows = self.store().deliveries(id, before, limit + 1).await?;
        let more = rows.len() > limit as usize;
        rows.truncate(limit as usize);
        let next_cursor = more
            .then(|| {
                rows.last()
                    .map(|d| URL_SAFE_NO_PAD.encode(format!("d:{}", d.id)))
            })
            .flatten();
        Ok(PageOf {
            items: rows.into_iter().map(DeliveryView::from).collect(),
            next_cursor,
        })
    }

    /// Endpoint `id`, if `p` may see it: merchants only their own.
    async fn visible_webhook(&self, p: &Principal, id: i64) -> AppResult<Webhook> {
        let w = self.store().webhook(id).await?;
        match p.merchant() {
            Some(m) if w.merchant_id != Some(m) => Err(AppError::NotFound),
            _ => Ok(w),
        }
    }

    /// The body's URL, checked against the target policy and normalized, and its event types
    /// checked.
    async fn checked_target(&self, body: &WebhookBody) -> AppResult<String> {
        let url = match self.settings().webhook_targets.check_url(&body.url).await {
            Ok(url) => url,
            Err(TargetError::Invalid(why)) => {
                return Err(AppError::invalid(
                    "invalid_url",
                    "url",
                    format!("an http:// URL with a host, at most 2048 characters: {why}"),
                ))
            }
            Err(TargetError::Internal) => {
                return Err(AppError::invalid(
                    "url_not_allowed",
                    "url",
                    "the URL points at a loopback, private, link-local or otherwise internal \
                     address; use a public address (operators can allow hosts with \
                     webhook_allow_hosts)",
                ))
            }
        };
        if body.event_types.is_empty() || body.event_types.len() > 20 {
            return Err(AppError::invalid(
                "invalid_value",
                "event_types",
                "1 to 20 event types, or [\"*\"]",
            ));
        }
        for (i, t) in body.event_types.iter().enumerate() {
            if t != "*" && !kind::ALL.contains(&t.as_str()) {
                return Err(AppError::invalid(
                    "unknown_event_type",
                    &format!("event_types[{i}]"),
                    format!("one of {}", kind::ALL.join(", ")),
                ));
            }
        }
        Ok(url.into())
    }
}

/// The delivery id a deliveries cursor names, if this layer wrote it.
fn delivery_cursor(c: &str) -> Option<i64> {
    let bytes = URL_SAFE_NO_PAD.decode(c).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    text.strip_prefix("d:")?.parse().ok()
}
