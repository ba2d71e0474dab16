//! The outbox as a replayable feed ([`App::events`]): a consumer that lost webhooks (or never
//! had them) reads every event in commit order from where it stopped; people read it newest
//! first. The platform reads every event, a merchant those of its own templates.

use std::collections::HashMap;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use coupond_domain::{MerchantId, TemplateId, Timestamp};
use coupond_store::{Event, OutboxPosition, StoreError};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::caller::{Access, Principal, CAMPAIGN_READ};
use crate::context::App;
use crate::error::{AppError, AppResult};

/// The events' type names (`coupon.used`, ...).
pub use coupond_store::events::kind;

/// Who may read the feed: the platform and merchants (each its own templates' events).
pub const READ: Access = CAMPAIGN_READ;

/// Where to read the feed from and what, as the caller wrote it.
#[derive(Clone, Debug, Default)]
pub struct EventsRequest {
    /// `next_cursor` of the previous answer; absent: from the first (or, newest first, the
    /// last) event.
    pub after: Option<String>,
    /// Only events of these types, comma-separated.
    pub kinds: Option<String>,
    /// Events to read, 1..=`max_page` (default `default_page`).
    pub limit: Option<u32>,
    /// `asc` (the default) or `desc` (newest first).
    pub order: Option<String>,
}

/// One event, as webhooks carry it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct EventView {
    pub id: i64,
    #[serde(rename = "type")]
    pub kind: String,
    pub at: Timestamp,
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
}

/// A stretch of the feed.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct EventPage {
    pub items: Vec<EventView>,
    /// Where this stretch ended: pass it as `after` to go on. Always present, so a consumer
    /// can poll from it; it moves past events the filters left out, too.
    pub next_cursor: String,
}

/// Most reads of `limit` events one request makes while filters leave events out: what one
/// request can cost is bounded whatever the filters.
const SCAN_PAGES: usize = 10;

fn encode(p: OutboxPosition) -> String {
    URL_SAFE_NO_PAD.encode(format!("e:{}:{}", p.txid, p.event_id))
}

fn decode(s: &str) -> Option<OutboxPosition> {
    if s.len() > 64 {
        return None;
    }
    let text = String::from_utf8(URL_SAFE_NO_PAD.decode(s).ok()?).ok()?;
    let mut parts = text.strip_prefix("e:")?.split(':');
    let p = OutboxPosition {
        txid: parts.next()?.parse().ok()?,
        event_id: parts.next()?.parse().ok()?,
    };
    (parts.next().is_none() && p.txid >= 0 && p.event_id >= 0 && encode(p) == s).then_some(p)
}

fn bad(field: &'static str, message: impl Into<String>) -> AppError {
    AppError::bad_query(field, message)
}

impl App {
    /// The feed as `p` may read it, `req` says where from and what: up to `limit` events that
    /// pass the filters, looking at no more than `SCAN_PAGES` × `limit` of them, and the cursor
    /// to go on from.
    pub async fn events(&self, p: &Principal, req: EventsRequest) -> AppResult<EventPage> {
        let limit = req.limit.unwrap_or(self.settings().default_page);
        if limit == 0 || limit > self.settings().max_page {
            let max = self.settings().max_page;
            return Err(bad("limit", format!("limit must be from 1 to {max}")));
        }
        let kinds = parse_kinds(req.kinds.as_deref())?;
        match req.order.as_deref() {
            None | Some("asc") => {}
            Some("desc") => return self.newest(p, req.after.as_deref(), limit, &kinds).await,
            Some(_) => return Err(bad("order", "asc or desc")),
        }
        let after = match req.after.as_deref() {
            None => OutboxPosition::default(),
            Some(c) => {
                decode(c).ok_or_else(|| bad("after", "cursor is not one this API issued"))?
            }
        };
        let read = |at: OutboxPosition| self.store().outbox_read(at, limit);
        let position = |e: &Event| OutboxPosition {
            txid: e.txid,
            event_id: e.id,
        };
        let (items, next) = self.scan(p, &kinds, limit, after, read, position).await?;
        Ok(EventPage {
            items,
            next_cursor: encode(next),
        })
    }

    /// The feed newest first (`order=desc`), below the cursor `after`.
    async fn newest(
        &self,
        p: &Principal,
        after: Option<&str>,
        limit: u32,
        kinds: &Option<Vec<&'static str>>,
    ) -> AppResult<EventPage> {
        let before = match after {
            None => None,
            Some(c) => Some(
                decode_before(c)
                    .ok_or_else(|| bad("after", "cursor is not one this API issued"))?,
            ),
        };
        let read = |before: Option<i64>| self.store().outbox_latest(before, limit);
        let (items, before) = self
            .scan(p, kinds, limit, before, read, |e| Some(e.id))
            .await?;
        Ok(EventPage {
            items,
            next_cursor: encode_before(before.unwrap_or(i64::MAX)),
        })
    }

    /// Reads the feed a page at a time from `at` (`read`) until `limit` events pass the
    /// filters, the feed has no more, or [`SCAN_PAGES`] reads have been spent (filters may
    /// leave most events out); answers the events that passed and the position of the last
    /// one looked at (`position`), where the next answer goes on.
    async fn scan<P: Copy, Fut>(
        &self,
        p: &Principal,
        kinds: &Option<Vec<&'static str>>,
        limit: u32,
        mut at: P,
        read: impl Fn(P) -> Fut,
        position: impl Fn(&Event) -> P,
    ) -> AppResult<(Vec<EventView>, P)>
    where
        Fut: std::future::Future<Output = coupond_store::StoreResult<Vec<Event>>>,
    {
        let mut owners: HashMap<TemplateId, Option<MerchantId>> = HashMap::new();
        let mut items = Vec::new();
        for _ in 0..SCAN_PAGES {
            let events = read(at).await?;
            if events.is_empty() {
                break;
            }
            for e in events {
                if items.len() == limit as usize {
                    break;
                }
                at = position(&e);
                if self.wanted(p, kinds, &mut owners, &e).await? {
                    items.push(EventView {
                        id: e.id,
                        kind: e.kind,
                        at: e.at,
                        data: e.body,
                    });
                }
            }
            if items.len() == limit as usize {
                break;
            }
        }
        Ok((items, at))
    }

    /// Whether event `e` passes the type filter and, for a merchant, is about its own
    /// template.
    async fn wanted(
        &self,
        p: &Principal,
        kinds: &Option<Vec<&'static str>>,
        owners: &mut HashMap<TemplateId, Option<MerchantId>>,
        e: &Event,
    ) -> AppResult<bool> {
        if !kinds.as_ref().is_none_or(|k| k.contains(&e.kind.as_str())) {
            return Ok(false);
        }
        match p.merchant() {
            Some(m) => Ok(self.event_owner(owners, e).await? == Some(m)),
            None => Ok(true),
        }
    }

    /// The merchant owning the template an event is about (`None` for events about no
    /// template, or a platform template), looked up once per template.
    async fn event_owner(
        &self,
        owners: &mut HashMap<TemplateId, Option<MerchantId>>,
        e: &Event,
    ) -> AppResult<Option<MerchantId>> {
        let Some(t) = e
            .body
            .get("template_id")
            .and_then(serde_json::Value::as_i64)
            .and_then(|t| TemplateId::new(t).ok())
        else {
            return Ok(None);
        };
        if let Some(m) = owners.get(&t) {
            return Ok(*m);
        }
        let m = match self.store().template(t).await {
            Ok(t) => t.merchant_id,
            // A deleted draft: nobody's.
            Err(StoreError::NotFound) => None,
            Err(e) => return Err(e.into()),
        };
        owners.insert(t, m);
        Ok(m)
    }
}

/// A newest-first cursor: the id of the oldest event looked at.
fn encode_before(id: i64) -> String {
    URL_SAFE_NO_PAD.encode(format!("n:{id}"))
}

fn decode_before(s: &str) -> Option<i64> {
    if s.len() > 64 {
        return None;
    }
    let text = String::from_utf8(URL_SAFE_NO_PAD.decode(s).ok()?).ok()?;
    let id: i64 = text.strip_prefix("n:")?.parse().ok()?;
    (id >= 0 && encode_before(id) == s).then_some(id)
}

/// The kinds asked for, each one the API knows.
fn parse_kinds(text: Option<&str>) -> AppResult<Option<Vec<&'static str>>> {
    let Some(text) = text else {
        return Ok(None);
    };
    text.split(',')
        .map(|k| {
            kind::ALL
                .into_iter()
                .find(|known| *known == k)
                .ok_or_else(|| {
                    bad(
                        "type",
                        format!("unknown event type; one of {}", kind::ALL.join(", ")),
                    )
                })
        })
        .collect::<AppResult<Vec<_>>>()
        .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        let p = OutboxPosition {
            txid: 7,
            event_id: 42,
        };
        assert_eq!(decode(&encode(p)), Some(p));
        for bad in ["", "e:1:2", "ZTox", &"A".repeat(100)] {
            assert_eq!(decode(bad), None, "{bad:?}");
        }
        assert_eq!(decode_before(&encode_before(9)), Some(9));
        assert_eq!(decode_before("bm9wZQ"), None);
        assert_eq!(
            parse_kinds(Some("coupon.used")).unwrap(),
            Some(vec!["coupon.used"])
        );
        assert!(parse_kinds(Some("coupon.used,nope")).is_err());
    }
}
