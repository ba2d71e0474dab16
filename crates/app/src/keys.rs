//! Merchants' API keys: the platform creates, lists, revokes and reassigns them; a merchant
//! (its key, its owners) creates, lists and revokes its own. A key's secret is answered once,
//! by the call that creates it; only its hash is stored. A revoked or reassigned key is known
//! at once here and, through the notice, within `cache_ttl` on other instances.

use coupond_domain::{Area, MerchantId, Note, OperatorId};
use coupond_engine::keys;
use coupond_engine::shared::Notice;
use coupond_store::ApiKey;

use crate::caller::{roles, Access, Principal};
use crate::context::App;
use crate::error::{AppError, AppResult};

/// Who may create, list and revoke a merchant's keys: the platform's admins, and the
/// merchant's own (not its staff, whose role may not manage keys).
pub const MANAGE: Access = Access {
    roles: roles::PLATFORM_MERCHANT,
    area: Area::Admin,
};

/// Who may give a merchant's key to another of its people: the platform's admins.
pub const REASSIGN: Access = Access {
    roles: roles::PLATFORM,
    area: Area::Admin,
};

/// A key just made, with its secret (shown this once).
#[derive(Debug)]
pub struct NewKey {
    pub key: ApiKey,
    pub secret: String,
}

impl App {
    /// Makes a key for merchant `id` labelled `label` (1 to 500 visible characters).
    pub async fn create_merchant_key(
        &self,
        p: &Principal,
        id: MerchantId,
        label: &str,
    ) -> AppResult<NewKey> {
        own(p, id)?;
        let label = Note::parse("label", label)?.as_str().to_owned();
        let role = coupond_store::Role::Merchant;
        let (key, secret) = keys::issue(self.store(), role, Some(id), label, self.now()).await?;
        Ok(NewKey { key, secret })
    }

    /// Merchant `id`'s keys, newest first, revoked ones too.
    pub async fn merchant_keys(&self, p: &Principal, id: MerchantId) -> AppResult<Vec<ApiKey>> {
        self.merchant(p, id).await?;
        let all = self.store().list_api_keys().await?;
        let mut theirs: Vec<ApiKey> = all
            .into_iter()
            .filter(|k| k.merchant_id == Some(id))
            .collect();
        theirs.reverse();
        Ok(theirs)
    }

    /// Revokes merchant `id`'s key `key` (again: the key with its first `revoked_at`).
    pub async fn revoke_merchant_key(
        &self,
        p: &Principal,
        id: MerchantId,
        key: i64,
    ) -> AppResult<ApiKey> {
        own(p, id)?;
        let key = keys::revoke(self.store(), key, Some(id), self.now()).await?;
        // The cache is keyed by the secret's hash, which is not at hand: forgetting every
        // cached key (here and on every instance) costs one lookup per key on its next use.
        self.tell(Notice::KeysChanged);
        Ok(key)
    }

    /// Gives merchant `id`'s key `key` to `operator`, an enabled person of the merchant, or
    /// to nobody.
    pub async fn reassign_merchant_key(
        &self,
        id: MerchantId,
        key: i64,
        operator: Option<OperatorId>,
    ) -> AppResult<ApiKey> {
        let given = keys::reassign(self.store(), key, id, operator, self.now()).await;
        let key = given.map_err(|e| match e {
            keys::ReassignError::NotTheirs => AppError::invalid(
                "invalid_owner",
                "operator_id",
                "not an enabled person of the key's merchant",
            ),
            keys::ReassignError::Store(e) => e.into(),
        })?;
        self.tell(Notice::KeysChanged);
        Ok(key)
    }
}

/// A merchant addresses only its own keys: another merchant's are answered as absent.
fn own(p: &Principal, id: MerchantId) -> AppResult<()> {
    match p.merchant() {
        Some(m) if m != id => Err(AppError::NotFound),
        _ => Ok(()),
    }
}
