//! Tags the platform shares with merchants. Every tag coupond holds for users is private to
//! the platform until it is shared here: a merchant's segment issuance counts only shared tags
//! (an unshared one is a tag nobody holds, so its answer is the same as for a tag that does
//! not exist), and a merchant's template audience may name only shared tags (422
//! `tag_not_shared`, whether or not anyone holds the tag). The platform uses every tag.
//!
//! Unsharing stops new segments and audiences naming the tag; a job already made keeps its
//! users, and a template whose audience already names it keeps that audience.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use coupond_domain::{Tag, Timestamp};
use coupond_store::SharedTag;
use serde::Serialize;
use utoipa::ToSchema;

use crate::caller::{roles, Access};
use crate::context::App;
use crate::error::{AppError, AppResult};
use crate::pages::{PageOf, PageRequest};

/// Who may share and unshare tags: the platform's admins.
pub const MANAGE: Access = Access {
    roles: roles::PLATFORM,
    area: coupond_domain::Area::Admin,
};

/// Who may list the shared tags: the platform.
pub const READ: Access = Access {
    roles: roles::PLATFORM,
    area: coupond_domain::Area::Read,
};

/// A tag shared with merchants.
#[derive(Debug, Serialize, ToSchema)]
pub struct SharedTagView {
    #[schema(value_type = String, example = "churn-risk")]
    pub tag: Tag,
    /// When it was shared (sharing it again keeps this).
    pub shared_at: Timestamp,
}

impl From<SharedTag> for SharedTagView {
    fn from(t: SharedTag) -> Self {
        SharedTagView {
            tag: t.tag,
            shared_at: t.shared_at,
        }
    }
}

impl App {
    /// Shares `tag` with merchants (sharing it again changes nothing).
    pub async fn share_tag(&self, tag: &Tag) -> AppResult<SharedTagView> {
        let shared = coupond_engine::user_tags::share(self.store(), tag, self.now()).await?;
        Ok(shared.into())
    }

    /// Stops sharing `tag`.
    pub async fn unshare_tag(&self, tag: &Tag) -> AppResult<()> {
        coupond_engine::user_tags::unshare(self.store(), tag, self.now()).await?;
        Ok(())
    }

    /// A page of the shared tags, by tag (their own cursor: the last tag shown).
    pub async fn shared_tags(&self, page: PageRequest) -> AppResult<PageOf<SharedTagView>> {
        // The limit is checked as on every list; the cursor is a tag, not an id.
        let limit = PageRequest {
            cursor: None,
            limit: page.limit,
        };
        let limit = limit.page(self.settings())?.limit;
        let after = page.cursor.as_deref().map(decode_cursor).transpose()?;
        let mut rows = self.store().shared_tags(after.as_ref(), limit).await?;
        let wanted = (limit - 1) as usize;
        let more = rows.len() > wanted;
        rows.truncate(wanted);
        let next_cursor = more
            .then(|| rows.last().map(|t| encode_cursor(&t.tag)))
            .flatten();
        Ok(PageOf {
            items: rows.into_iter().map(Into::into).collect(),
            next_cursor,
        })
    }
}

fn encode_cursor(tag: &Tag) -> String {
    URL_SAFE_NO_PAD.encode(format!("tag:{}", tag.as_str()))
}

/// The tag of a cursor [`encode_cursor`] wrote; 400 `invalid_query` naming `cursor` for any
/// other text.
fn decode_cursor(cursor: &str) -> AppResult<Tag> {
    let tag = (cursor.len() <= 100)
        .then(|| URL_SAFE_NO_PAD.decode(cursor.as_bytes()).ok())
        .flatten()
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|t| Tag::parse(t.strip_prefix("tag:")?).ok())
        .filter(|t| encode_cursor(t) == cursor);
    tag.ok_or_else(|| AppError::bad_query("cursor", "cursor is not one this API issued"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        let tag = Tag::parse("city:1").unwrap();
        assert_eq!(decode_cursor(&encode_cursor(&tag)).unwrap(), tag);
        for bad in ["", "not-a-cursor", &URL_SAFE_NO_PAD.encode("tag:Not A Tag")] {
            assert!(decode_cursor(bad).is_err(), "{bad}");
        }
        assert!(decode_cursor(&URL_SAFE_NO_PAD.encode("id:5")).is_err());
    }
}
