//! API keys' one workflow here: revoking a key, for the API and the command line alike,
//! recorded in the audit trail. (Keys are made by `coupond_api::auth::issue_key`, which holds
//! the key format and records its own change.)

use coupond_domain::{MerchantId, Timestamp};
use coupond_store::audit::{self, Change};
use coupond_store::{ApiKey, Store, StoreError, StoreResult};

/// Revokes API key `id` (with `merchant`, only that merchant's: another's is `NotFound`).
/// Revoking a revoked key answers it as it is and records nothing.
pub async fn revoke(
    store: &dyn Store,
    id: i64,
    merchant: Option<MerchantId>,
    now: Timestamp,
) -> StoreResult<ApiKey> {
    let key = store
        .list_api_keys()
        .await?
        .into_iter()
        .find(|k| k.id == id && merchant.is_none_or(|m| k.merchant_id == Some(m)))
        .ok_or(StoreError::NotFound)?;
    if key.revoked_at.is_some() {
        return Ok(key);
    }
    let change = Change::new("api_key.revoke", "api_key", now)
        .object(id)
        .merchant(key.merchant_id)
        .before(&serde_json::json!({ "label": key.label, "revoked": false }))
        .after(&serde_json::json!({ "label": key.label, "revoked": true }))
        .only_differences();
    audit::change(change, store.revoke_api_key(id, now)).await
}
