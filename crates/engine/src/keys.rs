//! API keys: their format (a `cpd_` prefix and 256 random bits, stored as its SHA-256 hash),
//! issuing and revoking them, for the API, the console and the command line alike, each
//! recorded in the audit trail.

use std::fmt;

use base64::Engine;
use coupond_domain::{MerchantId, OperatorId, Timestamp};
use coupond_store::audit::{self, Change};
use coupond_store::{ApiKey, Store, StoreError, StoreResult};
use sha2::{Digest, Sha256};

/// Every API key starts with this, so keys are recognisable in logs and secret scanners.
pub const KEY_PREFIX: &str = "cpd_";

/// A freshly generated API key: the secret (shown once) and what is stored.
#[derive(Clone)]
pub struct GeneratedKey {
    pub secret: String,
    pub hash: [u8; 32],
    pub prefix: String,
}

impl fmt::Debug for GeneratedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GeneratedKey")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// Generates a random 256-bit key.
pub fn generate_api_key() -> GeneratedKey {
    let bytes: [u8; 32] = rand::random();
    let secret = format!(
        "{KEY_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    );
    GeneratedKey {
        hash: hash_api_key(&secret),
        prefix: secret.chars().take(12).collect(),
        secret,
    }
}

/// Creates an API key of `role` (a merchant key for `merchant`, which must exist: otherwise
/// `NotFound`) and returns it with its secret, which is shown once and never stored. The one
/// way keys are made, for the CLI and the API. Made by a person (the audit context's operator),
/// the key is theirs and works only while their account is enabled.
pub async fn issue(
    store: &dyn coupond_store::Store,
    role: coupond_store::Role,
    merchant: Option<MerchantId>,
    label: String,
    now: Timestamp,
) -> Result<(coupond_store::ApiKey, String), StoreError> {
    if let Some(m) = merchant {
        store.merchant(m).await?;
    }
    let k = generate_api_key();
    // A key a person makes is theirs: it stops working when their account is disabled.
    let operator_id = match audit::current().map(|c| c.who) {
        Some(audit::Who::Operator { id, .. }) => Some(id),
        _ => None,
    };
    let new = coupond_store::NewApiKey {
        hash: k.hash,
        prefix: k.prefix,
        role,
        merchant_id: merchant,
        label,
        operator_id,
    };
    let change = Change::new("api_key.create", "api_key", now)
        .merchant(merchant)
        .after(&serde_json::json!({
            "role": role.as_str(), "merchant_id": merchant, "label": new.label, "prefix": new.prefix,
            "operator_id": operator_id,
        }));
    let stored = audit::change(change, store.insert_api_key(&new, now)).await?;
    Ok((stored, k.secret))
}

pub fn hash_api_key(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

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

/// Makes merchant `merchant`'s key `id` belong to `operator` (an enabled person of that
/// merchant), or to nobody: how the platform keeps a key working when the person who made it
/// leaves. Recorded as `api_key.reassign` with the owner before and after.
pub async fn reassign(
    store: &dyn Store,
    id: i64,
    merchant: MerchantId,
    operator: Option<OperatorId>,
    now: Timestamp,
) -> Result<ApiKey, ReassignError> {
    let key = store
        .list_api_keys()
        .await?
        .into_iter()
        .find(|k| k.id == id && k.merchant_id == Some(merchant))
        .ok_or(StoreError::NotFound)?;
    if let Some(op) = operator {
        let person = match store.operator(op).await {
            Ok(p) => p,
            Err(StoreError::NotFound) => return Err(ReassignError::NotTheirs),
            Err(e) => return Err(e.into()),
        };
        if person.merchant_id != Some(merchant) || person.disabled_at.is_some() {
            return Err(ReassignError::NotTheirs);
        }
    }
    let change = Change::new("api_key.reassign", "api_key", now)
        .object(id)
        .merchant(key.merchant_id)
        .before(&serde_json::json!({ "operator_id": key.operator_id }))
        .after(&serde_json::json!({ "operator_id": operator }));
    Ok(audit::change(change, store.set_api_key_operator(id, operator)).await?)
}

/// Why a key was not given to another person.
#[derive(Debug, thiserror::Error)]
pub enum ReassignError {
    /// The person is not an enabled person of the key's merchant.
    #[error("not an enabled person of the key's merchant")]
    NotTheirs,
    #[error(transparent)]
    Store(#[from] StoreError),
}
