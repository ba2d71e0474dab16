//! Changes to users' tags and to the tags shared with merchants, each recorded in the audit
//! trail with who made it: one user's tags, sharing and unsharing a tag, and starting a bulk
//! tag upload (whose pairs the tag worker then applies). Handlers parse and authorize; these
//! write. And the one rule on what a merchant may name: only the tags the platform shares
//! ([`check_shared`], [`segment_tags`]).

use coupond_domain::{Audience, DomainError, Tag, Timestamp, UserId};
use coupond_store::audit::{self, Change};
use coupond_store::{NewTagUpload, SharedTag, Store, StoreResult, TagUpload};

use crate::campaigns::CampaignError;

/// Replaces `user`'s tags with `tags`, recording the tags before and after (nothing when
/// they are the same).
pub async fn put(
    store: &dyn Store,
    user: &UserId,
    tags: &[Tag],
    now: Timestamp,
) -> StoreResult<()> {
    let before = store.user_tags(user).await?;
    let change = Change::new("user.tags", "user", now)
        .object_key(user.as_str())
        .before(&serde_json::json!({ "tags": before }))
        .after(&serde_json::json!({ "tags": tags }))
        .only_differences();
    if before.as_slice() == tags {
        return store.put_user_tags(user, tags).await;
    }
    audit::change(change, store.put_user_tags(user, tags)).await
}

/// Shares `tag` with merchants (sharing a shared tag changes nothing, and records nothing).
pub async fn share(store: &dyn Store, tag: &Tag, now: Timestamp) -> StoreResult<SharedTag> {
    if is_shared(store, tag).await? {
        return store.share_tag(tag, now).await;
    }
    let change = Change::new("tag.share", "tag", now)
        .object_key(tag.as_str())
        .after(&serde_json::json!({ "shared": true }));
    audit::change(change, store.share_tag(tag, now)).await
}

/// Stops sharing `tag`; whether it was shared (only then is the change recorded).
pub async fn unshare(store: &dyn Store, tag: &Tag, now: Timestamp) -> StoreResult<bool> {
    if !is_shared(store, tag).await? {
        return store.unshare_tag(tag).await;
    }
    let change = Change::new("tag.unshare", "tag", now)
        .object_key(tag.as_str())
        .before(&serde_json::json!({ "shared": true }))
        .after(&serde_json::json!({ "shared": false }));
    audit::change(change, store.unshare_tag(tag)).await
}

async fn is_shared(store: &dyn Store, tag: &Tag) -> StoreResult<bool> {
    let shared = store.shared_of(std::slice::from_ref(tag)).await?;
    Ok(!shared.is_empty())
}

/// Stores a bulk tag upload for the tag worker, and `true`; with an `Idempotency-Key` already
/// used for the same file, that upload and `false` (for another file: `idempotency_key_reused`).
pub async fn start_upload(
    store: &dyn Store,
    new: &NewTagUpload<'_>,
    now: Timestamp,
) -> Result<(TagUpload, bool), CampaignError> {
    let change = Change::new("tag_upload.create", "tag_upload", now).after(&serde_json::json!({
        "pairs": new.pairs.len(), "lines": new.lines, "invalid": new.invalid,
    }));
    let (job, created) = audit::change(change, store.insert_tag_upload(new, now)).await?;
    crate::issuance::same_request(created, job.key_fingerprint, new.key.map(|k| k.fingerprint))?;
    Ok((job, created))
}

/// The tags of a segment that count for its sender: all of `any` for the platform, the shared
/// ones for a merchant (`merchant` true).
pub async fn segment_tags(store: &dyn Store, merchant: bool, any: &[Tag]) -> StoreResult<Vec<Tag>> {
    if !merchant {
        return Ok(any.to_vec());
    }
    store.shared_of(any).await
}

/// Refuses `tags` (of field `field`) naming one the platform does not share when a merchant
/// names them (`merchant` true): `tag_not_shared`, whether or not anyone holds the tag.
pub async fn check_shared(
    store: &dyn Store,
    merchant: bool,
    field: &str,
    tags: &[Tag],
) -> Result<(), CampaignError> {
    if !merchant {
        return Ok(());
    }
    let shared = store.shared_of(tags).await?;
    match tags.iter().find(|t| !shared.contains(t)) {
        None => Ok(()),
        Some(t) => Err(DomainError::invalid(
            field,
            "tag_not_shared",
            format!("tag {} is not shared with merchants", t.as_str()),
        )
        .into()),
    }
}

/// As [`check_shared`] for a template's audience (`audience.any`). An audience that does not
/// validate passes here, for the template's own validation to refuse.
pub async fn check_audience(
    store: &dyn Store,
    merchant: bool,
    audience: Option<&Audience>,
) -> Result<(), CampaignError> {
    match audience.map(|a| a.clone().validate()) {
        Some(Ok(Audience::Tags { any })) => {
            check_shared(store, merchant, "audience.any", &any).await
        }
        _ => Ok(()),
    }
}
