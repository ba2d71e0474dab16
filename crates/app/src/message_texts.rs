//! The platform's message texts per kind and locale (shipped in English and Simplified
//! Chinese, editable, with a preview), and the log of email and SMS sent.

use std::collections::{BTreeMap, BTreeSet};

use coupond_domain::messaging::text::{shipped, SHIPPED_LOCALES};
use coupond_domain::messaging::{Channel, Locale, MessageKind, MessageText, Purpose, Vars};
use coupond_domain::{Timestamp, UserId};
use coupond_store::audit::{self, Change};
use coupond_store::{Outbound, OutboundQuery, OutboundStatus};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::caller::{roles, Access};
use crate::context::App;
use crate::error::{AppError, AppResult};
use crate::pages::{finish, PageOf, PageRequest};

/// Who may read the texts and the delivery log: the platform.
pub const READ: Access = Access {
    roles: roles::PLATFORM,
    area: coupond_domain::Area::Read,
};

/// Who may change the texts and preview a change: the platform's admins.
pub const EDIT: Access = Access {
    roles: roles::PLATFORM,
    area: coupond_domain::Area::Admin,
};

/// One kind's text in one locale.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct MessageTextView {
    /// `coupon_claimed`, `coupon_expiring`, ...
    pub kind: String,
    pub locale: String,
    /// `marketing` (honours opt-outs, carries an unsubscribe link) or `service`.
    pub purpose: String,
    /// The variables its text may use.
    pub variables: Vec<String>,
    pub subject: String,
    pub body: String,
    pub sms: String,
    /// Whether the platform set it (else it is the one coupond ships).
    pub own: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Timestamp>,
}

fn view(
    kind: MessageKind,
    locale: &str,
    t: MessageText,
    own: Option<Timestamp>,
) -> MessageTextView {
    MessageTextView {
        kind: kind.as_str().into(),
        locale: locale.into(),
        purpose: match kind.purpose() {
            Purpose::Marketing => "marketing".into(),
            Purpose::Service => "service".into(),
        },
        variables: kind.variables().iter().map(|v| (*v).to_owned()).collect(),
        subject: t.subject,
        body: t.body,
        sms: t.sms,
        own: own.is_some(),
        updated_at: own,
    }
}

/// `kind` and `locale` from the path, checked.
fn target(kind: &str, locale: &str) -> AppResult<(MessageKind, Locale)> {
    let k = MessageKind::parse(kind)
        .ok_or_else(|| AppError::bad_request("invalid_path", "kind", "not a message kind"))?;
    let l = Locale::parse(locale)
        .map_err(|e| AppError::bad_request("invalid_path", "locale", e.message))?;
    Ok((k, l))
}

/// Every text, by kind then locale (a few dozen: one page).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct MessageTexts {
    pub items: Vec<MessageTextView>,
}

/// The platform's own text for `kind` in `locale`, if it set one.
async fn own_text(app: &App, kind: MessageKind, locale: &Locale) -> AppResult<Option<MessageText>> {
    let texts = app.store().message_texts().await?;
    Ok(texts
        .into_iter()
        .find(|t| t.kind == kind && t.locale == *locale)
        .map(|t| t.text))
}

/// The audit trail's entry for the platform's text of `kind` in `locale` going from `before`
/// to `after` (`None`: the shipped text): what every user receives, so who wrote it counts.
fn text_change(
    kind: MessageKind,
    locale: &Locale,
    before: Option<&MessageText>,
    after: Option<&MessageText>,
    now: Timestamp,
) -> Change {
    let action = if after.is_some() {
        "message_text.put"
    } else {
        "message_text.drop"
    };
    let mut c = Change::new(action, "message_text", now).object_key(&format!(
        "{}/{}",
        kind.as_str(),
        locale.as_str()
    ));
    if let Some(b) = before {
        c = c.before(b);
    }
    if let Some(a) = after {
        c = c.after(a);
    }
    c
}

/// A text filled in, as a reader would see it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PreviewView {
    pub subject: String,
    pub body: String,
    pub sms: String,
}

/// Which messages to list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct OutboundFilter {
    pub user_id: Option<UserId>,
    /// `email` or `sms`.
    pub channel: Option<String>,
    /// `queued`, `sent` or `failed`.
    pub status: Option<String>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size, 1..=200 (default 50).
    pub limit: Option<u32>,
}

/// One email or SMS and its fate.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct OutboundView {
    pub id: i64,
    pub channel: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<UserId>,
    pub address: String,
    pub subject: String,
    pub body: String,
    /// `queued`, `sent` or `failed`.
    pub status: String,
    pub attempts: i32,
    /// When it is due (queued) or was last tried.
    pub next_at: Timestamp,
    /// The provider's last answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    pub created_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_at: Option<Timestamp>,
}

impl From<Outbound> for OutboundView {
    fn from(o: Outbound) -> Self {
        OutboundView {
            id: o.id,
            channel: o.channel.as_str().into(),
            kind: o.kind.as_str().into(),
            user_id: o.user_id,
            address: o.address,
            subject: o.subject,
            // An invitation's link makes an account: only its address reads it, never the log.
            body: if o.kind == MessageKind::OperatorInvited {
                "(an invitation; its one-time link is withheld)".to_owned()
            } else {
                o.body
            },
            status: o.status.as_str().into(),
            attempts: o.attempts,
            next_at: o.next_at,
            answer: o.answer,
            created_at: o.created_at,
            sent_at: o.sent_at,
        }
    }
}

impl App {
    /// Every text: the platform's own per kind and locale, else the one shipped, for every
    /// shipped locale and every locale with a text of its own.
    pub async fn message_texts(&self) -> AppResult<MessageTexts> {
        let own: BTreeMap<(MessageKind, String), (MessageText, Timestamp)> = self
            .store()
            .message_texts()
            .await?
            .into_iter()
            .map(|t| {
                let key = (t.kind, t.locale.as_str().to_owned());
                (key, (t.text, t.updated_at))
            })
            .collect();
        let mut locales: BTreeSet<String> =
            SHIPPED_LOCALES.iter().map(|l| (*l).to_owned()).collect();
        locales.extend(own.keys().map(|(_, l)| l.clone()));
        let mut out = Vec::new();
        for kind in MessageKind::ALL {
            for locale in &locales {
                match own.get(&(kind, locale.clone())) {
                    Some((t, at)) => out.push(view(kind, locale, t.clone(), Some(*at))),
                    None => out.extend(shipped(kind, locale).map(|t| view(kind, locale, t, None))),
                }
            }
        }
        Ok(MessageTexts { items: out })
    }

    /// Sets the platform's own text of `kind` in `locale`.
    pub async fn put_message_text(
        &self,
        kind: &str,
        locale: &str,
        body: &MessageText,
    ) -> AppResult<MessageTextView> {
        let (kind, locale) = target(kind, locale)?;
        body.check(kind)?;
        let now = self.now();
        let before = own_text(self, kind, &locale).await?;
        let change = text_change(kind, &locale, before.as_ref(), Some(body), now);
        let write = self.store().put_message_text(kind, &locale, body, now);
        let saved = audit::change(change, write).await?;
        let at = Some(saved.updated_at);
        Ok(view(kind, locale.as_str(), saved.text, at))
    }

    /// Drops the platform's own text of `kind` in `locale` (the shipped one applies again).
    pub async fn drop_message_text(&self, kind: &str, locale: &str) -> AppResult<()> {
        let (kind, locale) = target(kind, locale)?;
        let Some(before) = own_text(self, kind, &locale).await? else {
            return Err(AppError::NotFound);
        };
        let change = text_change(kind, &locale, Some(&before), None, self.now());
        let write = self.store().drop_message_text(kind, &locale);
        match audit::change(change, write).await? {
            true => Ok(()),
            false => Err(AppError::NotFound),
        }
    }

    /// A page of the delivery log, newest first, filtered.
    pub async fn outbound(
        &self,
        f: OutboundFilter,
        page: PageRequest,
    ) -> AppResult<PageOf<OutboundView>> {
        let page = page.page(self.settings())?;
        let channel = f
            .channel
            .as_deref()
            .map(|c| {
                let outside = Channel::parse(c).filter(|c| Channel::OUTSIDE.contains(c));
                outside.ok_or_else(|| AppError::bad_query("channel", "must be email or sms"))
            })
            .transpose()?;
        let status = f
            .status
            .as_deref()
            .map(|x| {
                OutboundStatus::parse(x)
                    .ok_or_else(|| AppError::bad_query("status", "must be queued, sent or failed"))
            })
            .transpose()?;
        // Newest first: the page's cursor is the last id shown, and the next page lies below.
        let q = OutboundQuery {
            user_id: f.user_id,
            channel,
            status,
            before: page.after,
            limit: page.limit,
        };
        let rows = self.store().outbound(&q).await?;
        Ok(finish(rows, page, |o| o.id, OutboundView::from))
    }
}

/// Text `body` of `kind` in `locale` filled in with sample values, as a message would read.
pub fn preview(kind: &str, locale: &str, body: &MessageText) -> AppResult<PreviewView> {
    let (kind, locale) = target(kind, locale)?;
    body.check(kind)?;
    let zh = locale.as_str().starts_with("zh");
    let sample = |en: &str, cn: &str| if zh { cn.to_owned() } else { en.to_owned() };
    let vars = Vars::from([
        (
            "title",
            sample("Spring sale: 20 off 100", "春季特惠：满100减20"),
        ),
        ("value", sample("20.00 off", "减 20.00")),
        ("valid_until", "2027-01-10".to_owned()),
        ("days_left", "3".to_owned()),
        ("reason", sample("issued by mistake", "误发")),
        ("activity", sample("Spring sale", "春季特惠")),
        (
            "message",
            sample(
                "Only this weekend: use your coupon.",
                "仅限本周末，快来使用优惠券。",
            ),
        ),
    ]);
    let t = body.render(&vars);
    Ok(PreviewView {
        subject: t.subject,
        body: t.body,
        sms: t.sms,
    })
}
