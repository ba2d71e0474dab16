//! Who a caller is, and calls made as it: an API key (by its hash, through the key cache) or
//! an operator account (read on every call, so a disabled account or a changed role takes
//! effect at once) becomes an [`Identity`]; [`App::acting`] admits it to an operation by its
//! [`Access`] and runs the operation with the audit trail naming it. The API's route guard
//! and the console both call these.

use std::future::Future;

use coupond_domain::{Area, Operator, OperatorId};
use coupond_store::audit::{self, Who};
use coupond_store::{Role as KeyRole, StoreError};

use crate::caller::{Access, Identity, Principal};
use crate::context::App;
use crate::error::{AppError, AppResult};

/// Where a call comes from, for the audit trail; what is not given is taken from the call
/// this one runs within (a console page's request), if any.
#[derive(Clone, Debug, Default)]
pub struct Origin {
    pub request_id: Option<String>,
    /// The client's address (as a trusted proxy names it, else the peer).
    pub client: Option<String>,
}

/// Who an operator acts as: the platform's roles as the platform, a merchant's `owner` and
/// `staff` as their merchant; what each role may do within that is its [`Area`]s. `None` for
/// a record whose role and merchant disagree.
pub fn operator_principal(op: &Operator) -> Option<Principal> {
    match (op.role.is_platform(), op.merchant_id) {
        (true, None) => Some(Principal::Platform),
        (false, Some(m)) => Some(Principal::Merchant(m)),
        _ => None,
    }
}

impl App {
    /// The key with this SHA-256 hash, through the key cache: a revoked key stops working
    /// within `cache_ttl`. Unknown and revoked keys get the same answer.
    pub async fn identify_key(&self, hash: &[u8; 32]) -> AppResult<Identity> {
        if let Some((principal, who)) = self.key_cache().get(hash) {
            return Ok(Identity { principal, who });
        }
        // Read before the database: a revocation heard meanwhile keeps this copy out.
        let generation = self.key_cache().generation();
        let key = match self.store().api_key_by_hash(hash).await {
            Ok(k) if k.revoked_at.is_none() => k,
            Ok(_) | Err(StoreError::NotFound) => {
                return Err(AppError::Unauthorized("the API key is not valid"))
            }
            Err(e) => return Err(e.into()),
        };
        let principal = match (key.role, key.merchant_id) {
            (KeyRole::Platform, _) => Principal::Platform,
            (KeyRole::Service, _) => Principal::Service(key.id),
            (KeyRole::Merchant, Some(m)) => Principal::Merchant(m),
            (KeyRole::Merchant, None) => {
                return Err(AppError::Unauthorized("merchant key without merchant"))
            }
        };
        let who = Who::Key {
            id: key.id,
            label: key.label,
        };
        self.key_cache()
            .insert_from(generation, *hash, (principal.clone(), who.clone()));
        Ok(Identity { principal, who })
    }

    /// Operator `id`, if its account is enabled and its role may act in `area`.
    pub async fn identify_operator(&self, id: OperatorId, area: Area) -> AppResult<Identity> {
        let op = match self.store().operator(id).await {
            Ok(op) => op,
            Err(StoreError::NotFound) => {
                return Err(AppError::Unauthorized("the account is not valid"))
            }
            Err(e) => return Err(e.into()),
        };
        if op.disabled_at.is_some() {
            return Err(AppError::Unauthorized("the account is disabled"));
        }
        let principal = operator_principal(&op).ok_or(AppError::Forbidden)?;
        if !op.role.may(area) {
            return Err(AppError::Forbidden);
        }
        let who = Who::Operator {
            id,
            email: op.email.to_string(),
            role: op.role,
        };
        Ok(Identity { principal, who })
    }

    /// Runs `work` as `id` if `access` admits it (else `Forbidden`): [`App::admit`], then
    /// [`App::as_caller`].
    pub async fn acting<T>(
        &self,
        id: Identity,
        access: Access,
        origin: Origin,
        work: impl Future<Output = AppResult<T>>,
    ) -> AppResult<T> {
        self.admit(&id.principal, &id.who, access)?;
        self.as_caller(id.who, origin, work).await
    }

    /// Whether `access` admits the caller (else `Forbidden`); a user is marked seen (a map
    /// update in memory, written later in batches: `coupond_engine::seen`).
    pub fn admit(&self, principal: &Principal, who: &Who, access: Access) -> AppResult<()> {
        let id_admitted = match who {
            Who::Operator { role, .. } => role.may(access.area),
            _ => true,
        };
        if !id_admitted || !access.roles.contains(&principal.role()) {
            return Err(AppError::Forbidden);
        }
        if let Principal::User(user) = principal {
            self.seen().touch(user, self.now());
        }
        Ok(())
    }

    /// Runs `work` (already admitted) with the audit trail naming `who` as the caller of what
    /// it changes, from `origin`.
    pub async fn as_caller<F: Future>(&self, who: Who, origin: Origin, work: F) -> F::Output {
        let outer = audit::current();
        let ctx = audit::Context {
            who,
            request_id: origin
                .request_id
                .or_else(|| outer.as_ref().and_then(|c| c.request_id.clone())),
            client: origin.client.or_else(|| outer.and_then(|c| c.client)),
        };
        audit::acting(ctx, work).await
    }
}
