//! What coupond holds about a user, as those who help them read it: the coupons in their
//! wallet (the user their own; the platform and the order service all; a merchant's support
//! those of its templates), the tags segments read (one user's, or many at once by an
//! upload the tag worker applies), and when they were last seen.

use std::collections::HashMap;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use coupond_domain::tags::{tag_set, MAX_TAGS_PER_USER};
use coupond_domain::{Area, Coupon, CouponStatus, Tag, Template, TemplateId, Timestamp, UserId};
use coupond_store::{CouponQuery, NewTagUpload, TagUpload};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::caller::{roles, Access, Principal};
use crate::context::App;
use crate::error::{AppError, AppResult};
use crate::pages::{finish, PageOf, PageRequest};
use crate::views::{support_actions, CouponView};

/// Who may read a user's wallet: the platform, the order service, a merchant's support (its
/// own templates' coupons).
pub const WALLET: Access = Access {
    roles: roles::PLATFORM_MERCHANT_SERVICE,
    area: Area::Read,
};

/// Who may read a user's own wallet: the user.
pub const OWN_WALLET: Access = Access {
    roles: roles::USER,
    area: Area::Read,
};

/// Who may read a user's tags and when they were last seen: the platform and the order
/// service.
pub const PROFILE: Access = Access {
    roles: roles::PLATFORM_SERVICE,
    area: Area::Read,
};

/// Who may replace a user's tags and mark them seen.
pub const PROFILE_WRITE: Access = Access {
    roles: roles::PLATFORM_SERVICE,
    area: Area::Campaigns,
};

/// A user's tags, as stored.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct UserTagsView {
    #[schema(value_type = String)]
    pub user_id: UserId,
    #[schema(value_type = Vec<String>)]
    pub tags: Vec<Tag>,
}

/// A user's last-seen instant.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SeenView {
    #[schema(value_type = String)]
    pub user_id: UserId,
    /// When the user was last seen; absent if never. Requests of the user's own are counted
    /// within `users.seen_resolution` (5 minutes by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seen_at: Option<Timestamp>,
}

impl App {
    /// A page of `user`'s coupons as `p` may see them, soonest-expiring first (their own
    /// cursor: by expiry, then id). Those who help the user see the actions they may take.
    pub async fn wallet(
        &self,
        p: &Principal,
        user: UserId,
        status: Option<CouponStatus>,
        page: PageRequest,
    ) -> AppResult<PageOf<CouponView>> {
        let limit = page.rows(self.settings())?;
        let after = page.own_cursor(decode_cursor)?;
        let now = self.now();
        let query = CouponQuery {
            merchant: p.merchant(),
            user,
            status,
            now,
            after,
            limit: limit + 1,
        };
        let mut coupons = self.store().user_coupons(&query).await?;
        let more = coupons.len() > limit as usize;
        coupons.truncate(limit as usize);
        let next_cursor = more.then(|| coupons.last().map(encode_cursor)).flatten();
        let items = self.coupon_views(p, coupons, now).await?;
        Ok(PageOf { items, next_cursor })
    }

    /// `coupons` with their templates' terms, and, for one who helps the user (not the user),
    /// the actions `p` may take on each.
    async fn coupon_views(
        &self,
        p: &Principal,
        coupons: Vec<Coupon>,
        now: Timestamp,
    ) -> AppResult<Vec<CouponView>> {
        let mut templates: HashMap<TemplateId, Template> = HashMap::new();
        for c in &coupons {
            if let std::collections::hash_map::Entry::Vacant(slot) = templates.entry(c.template_id)
            {
                slot.insert(self.store().template(c.template_id).await?);
            }
        }
        let view = |c: Coupon| {
            let t = templates.get(&c.template_id)?;
            // Only those who help users get actions: none for the user or the service.
            let actions = support_actions(p, &c, now);
            let mut v = CouponView::new(c, t, now);
            v.actions = actions;
            Some(v)
        };
        Ok(coupons.into_iter().filter_map(view).collect())
    }

    /// The tags coupond holds for `user`.
    pub async fn user_tags(&self, user: UserId) -> AppResult<UserTagsView> {
        let tags = self.store().user_tags(&user).await?;
        Ok(UserTagsView {
            user_id: user,
            tags,
        })
    }

    /// Replaces `user`'s tags (0 to 100, each once).
    pub async fn put_user_tags(&self, user: UserId, tags: &[Tag]) -> AppResult<UserTagsView> {
        let tags = tag_set("tags", tags, 0, MAX_TAGS_PER_USER)?;
        coupond_engine::user_tags::put(self.store(), &user, &tags, self.now()).await?;
        Ok(UserTagsView {
            user_id: user,
            tags,
        })
    }

    /// Stores an upload of user-tag pairs as a job and wakes the tag worker; whether it was
    /// made now (not found again under its key).
    pub async fn start_tag_upload(&self, new: &NewTagUpload<'_>) -> AppResult<(TagUpload, bool)> {
        let started = coupond_engine::user_tags::start_upload(self.store(), new, self.now());
        let started = started.await?;
        self.tag_worker().wake();
        Ok(started)
    }

    /// Tag upload `id` and its progress.
    pub async fn tag_upload(&self, id: i64) -> AppResult<TagUpload> {
        Ok(self.store().tag_upload(id).await?)
    }

    /// A page of the tag uploads, oldest first.
    pub async fn tag_uploads(&self, page: PageRequest) -> AppResult<PageOf<TagUpload>> {
        let page = page.page(self.settings())?;
        let rows = self.store().tag_uploads(page).await?;
        Ok(finish(rows, page, |u| u.id, |u| u))
    }

    /// Records that `user` was active at `at` (default now; not in the future); the later of
    /// this and the instant stored stands.
    pub async fn mark_seen(&self, user: UserId, at: Option<Timestamp>) -> AppResult<SeenView> {
        let now = self.now();
        let at = match at {
            Some(at) if at > now => {
                let why = "at must not be in the future";
                return Err(AppError::invalid("invalid_value", "at", why));
            }
            Some(at) => at,
            None => now,
        };
        self.store().record_seen(&[(user.clone(), at)]).await?;
        self.last_seen(user).await
    }

    /// When `user` was last seen: the stored instant, or one this instance holds in memory
    /// not written yet, the later.
    pub async fn last_seen(&self, user: UserId) -> AppResult<SeenView> {
        let stored = self.store().last_seen(&user).await?;
        let last_seen_at = stored.max(self.seen().waiting(&user));
        Ok(SeenView {
            user_id: user,
            last_seen_at,
        })
    }
}

fn encode_cursor(c: &Coupon) -> String {
    URL_SAFE_NO_PAD.encode(format!("c:{}:{}", c.valid_until.unix_micros(), c.id))
}

fn decode_cursor(s: &str) -> Option<(Timestamp, i64)> {
    let text = String::from_utf8(URL_SAFE_NO_PAD.decode(s).ok()?).ok()?;
    let mut parts = text.strip_prefix("c:")?.split(':');
    let micros = parts.next()?.parse().ok()?;
    let id = parts.next()?.parse().ok()?;
    Some((Timestamp::from_unix_micros(micros)?, id))
}
