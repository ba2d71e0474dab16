//! Operator accounts: the people who sign into the console, platform staff and merchant staff,
//! each under their own name and role (issue 32). Every front door (the CLI today; the API and
//! the console's sign-in next) goes through [`Accounts`], which applies the domain's rules
//! (email, name, role and merchant, password policy) and hashes passwords with argon2id.
//!
//! A password is only ever kept as an argon2id PHC string (`$argon2id$v=19$m=19456,t=2,p=1$…`,
//! OWASP's parameters: 19 MiB, two passes). Hashing takes tens of milliseconds of one core on
//! purpose, so it runs on tokio's blocking pool, never on a request's worker thread.

use std::sync::Arc;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use coupond_domain::OperatorId;
use coupond_domain::{
    check_operator_name, check_password, DomainError, Email, MerchantId, Operator, OperatorDraft,
    OperatorRole, Timestamp,
};
use coupond_store::audit::{self, Change, Who};
use coupond_store::{Conflict, Store, StoreError};

use crate::clock::Clock;
use crate::second_factor;

/// How long a set-password link works.
pub const RESET_TTL: time::Duration = time::Duration::hours(1);

/// Why an account change was refused.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    /// The input breaks a rule (the error names the field).
    #[error(transparent)]
    Invalid(#[from] DomainError),
    #[error("an operator with this email exists")]
    EmailTaken,
    #[error("no merchant with this id")]
    NoMerchant,
    #[error("no such operator")]
    NotFound,
    /// A set-password link that is unknown, used already or older than [`RESET_TTL`].
    #[error("this link is not valid any more")]
    ResetInvalid,
    #[error("password hashing failed: {0}")]
    Hashing(String),
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for AccountError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => AccountError::NotFound,
            StoreError::Conflict(Conflict::Unique) => AccountError::EmailTaken,
            StoreError::Conflict(Conflict::Reference) => AccountError::NoMerchant,
            e => AccountError::Store(e),
        }
    }
}

/// What [`Accounts::update`] changes.
#[derive(Clone, Debug, Default)]
pub struct OperatorChange<'a> {
    pub name: Option<&'a str>,
    pub role: Option<OperatorRole>,
    pub disabled: Option<bool>,
}

/// The accounts' workflows over the store. Cheap to clone.
#[derive(Clone)]
pub struct Accounts {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Accounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Accounts").finish_non_exhaustive()
    }
}

impl Accounts {
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        Accounts { store, clock }
    }

    /// Adds an operator, with `password` (checked against the policy, then hashed) or none
    /// yet (a set-password link comes later).
    pub async fn add(
        &self,
        draft: &OperatorDraft,
        password: Option<&str>,
    ) -> Result<Operator, AccountError> {
        let hash = match password {
            Some(p) => Some(hash_password(p).await?),
            None => None,
        };
        let now = self.clock.now();
        let change = Change::new("operator.create", "operator", now)
            .merchant(draft.merchant_id())
            .after(&serde_json::json!({
                "email": draft.email(), "name": draft.name(), "role": draft.role(),
                "merchant_id": draft.merchant_id(), "password_set": hash.is_some(),
            }));
        let write = self.store.insert_operator(draft, hash.as_deref(), now);
        Ok(audit::change(change, write).await?)
    }

    /// Operators by id after `after` (a merchant's staff only, with `merchant`).
    pub async fn list(
        &self,
        merchant: Option<MerchantId>,
        after: Option<i64>,
        limit: u32,
    ) -> Result<Vec<Operator>, AccountError> {
        Ok(self.store.list_operators(merchant, after, limit).await?)
    }

    /// The operator with this id.
    pub async fn operator(&self, id: OperatorId) -> Result<Operator, AccountError> {
        Ok(self.store.operator(id).await?)
    }

    /// Renames an operator, moves them to another role on the same side (platform or their
    /// merchant), and disables or enables them; what `change` leaves `None` stays.
    pub async fn update(
        &self,
        id: OperatorId,
        change: &OperatorChange<'_>,
    ) -> Result<Operator, AccountError> {
        let mut op = self.store.operator(id).await?;
        if let Some(name) = change.name {
            check_operator_name(name)?;
        }
        if let Some(role) = change.role {
            op.role.check_change(role)?;
        }
        let now = self.clock.now();
        if change.name.is_some() || change.role.is_some() {
            let after = Operator {
                name: change.name.map_or(op.name.clone(), str::to_owned),
                role: change.role.unwrap_or(op.role),
                ..op.clone()
            };
            let audit = operator_change("operator.update", &op, &after, now);
            let write = self
                .store
                .update_operator(id, change.name, change.role, now);
            op = audit::change(audit, write).await?;
        }
        if let Some(disabled) = change.disabled {
            op = self.set_disabled(id, disabled).await?;
        }
        Ok(op)
    }

    /// The operator with this email.
    pub async fn by_email(&self, email: &Email) -> Result<Operator, AccountError> {
        match self.store.operator_by_email(email).await? {
            Some((op, _)) => Ok(op),
            None => Err(AccountError::NotFound),
        }
    }

    /// Disables (its console sessions end in the same transaction) or enables an operator.
    pub async fn set_disabled(
        &self,
        id: OperatorId,
        disabled: bool,
    ) -> Result<Operator, AccountError> {
        let now = self.clock.now();
        let op = self.store.operator(id).await?;
        let after = Operator {
            disabled_at: disabled.then_some(op.disabled_at.unwrap_or(now)),
            ..op.clone()
        };
        let action = if disabled {
            "operator.disable"
        } else {
            "operator.enable"
        };
        let audit = operator_change(action, &op, &after, now);
        let write = self.store.set_operator_disabled(id, disabled, now);
        Ok(audit::change(audit, write).await?)
    }

    /// Replaces an operator's password (checked, hashed); its sessions end.
    pub async fn set_password(&self, id: OperatorId, password: &str) -> Result<(), AccountError> {
        let hash = hash_password(password).await?;
        let now = self.clock.now();
        let op = self.store.operator(id).await?;
        let write = self.store.set_operator_password(id, &hash, now);
        Ok(audit::change(password_change(&op, now), write).await?)
    }

    /// A one-time token that sets `id`'s password within [`RESET_TTL`] (the link a new
    /// account, or one whose password was forgotten, is given). Only its SHA-256 is stored, so
    /// a copy of the database sets no password.
    pub async fn start_reset(&self, id: OperatorId) -> Result<String, AccountError> {
        let op = self.store.operator(id).await?;
        let mut raw = [0u8; 32];
        rand::fill(&mut raw);
        let token: String = raw.iter().map(|b| format!("{b:02x}")).collect();
        let now = self.clock.now();
        let expires = now.plus(RESET_TTL);
        let change = Change::new("operator.reset_link", "operator", now)
            .object(id.get())
            .merchant(op.merchant_id)
            .after(&serde_json::json!({ "link_expires_at": expires }));
        let hash = token_hash(&token);
        let write = self.store.insert_password_reset(&hash, op.id, expires);
        audit::change(change, write).await?;
        Ok(token)
    }

    /// Sets the password of the operator `token` was given for, and uses the token up; its
    /// sessions end. A password the policy refuses leaves the token usable. The token is
    /// checked before the password is hashed: anyone can post this form, and only a holder
    /// of a live link may make the service spend a hash's time.
    pub async fn finish_reset(
        &self,
        token: &str,
        password: &str,
    ) -> Result<OperatorId, AccountError> {
        check_password(password)?;
        let now = self.clock.now();
        let Some(id) = self
            .store
            .take_password_reset(&token_hash(token), now)
            .await?
        else {
            return Err(AccountError::ResetInvalid);
        };
        let hash = hash_password(password).await?;
        let op = self.store.operator(id).await?;
        // Whoever holds the link acts as the account it was made for.
        let who = audit::Context {
            who: Who::Operator {
                id,
                email: op.email.to_string(),
                role: op.role,
            },
            ..audit::current().unwrap_or_else(|| audit::Context {
                who: Who::System("coupond".to_owned()),
                request_id: None,
                client: None,
            })
        };
        let write = self.store.set_operator_password(id, &hash, now);
        let change = password_change(&op, now);
        audit::acting(who, audit::change(change, write)).await?;
        Ok(id)
    }

    /// The operator `email` names if `password` is theirs and the account is enabled (and has
    /// no second factor: see [`Accounts::sign_in`]).
    pub async fn verify(
        &self,
        email: &Email,
        password: &str,
    ) -> Result<Option<Operator>, AccountError> {
        self.sign_in(email, password, None).await
    }

    /// The operator `email` names if `password` is theirs, the account is enabled and, when it
    /// has a second factor, `code` is a current code not used before. An unknown email, a
    /// disabled account, a wrong password and a wrong code all cost one argon2 verification
    /// and answer `None`, so the answer and its time say nothing about which.
    pub async fn sign_in(
        &self,
        email: &Email,
        password: &str,
        code: Option<&str>,
    ) -> Result<Option<Operator>, AccountError> {
        let found = self.store.operator_by_email(email).await?;
        let (op, hash) = match found {
            Some((op, Some(hash))) => (Some(op), hash),
            Some((_, None)) | None => (None, UNKNOWN.to_owned()),
        };
        let matches = verify_password(hash, password.to_owned()).await;
        let Some(op) = op.filter(|o| matches && o.disabled_at.is_none()) else {
            return Ok(None);
        };
        if !op.has_totp {
            return Ok(Some(op));
        }
        let accepted = match (self.store.operator_totp(op.id).await?, code) {
            (Some(secret), Some(code)) => {
                match second_factor::matching_step(&secret, code, self.clock.now()) {
                    Some(step) => self.store.use_totp_step(op.id, step).await?,
                    None => false,
                }
            }
            _ => false,
        };
        Ok(accepted.then_some(op))
    }

    /// Turns on operator `id`'s second factor with `secret` (base32, from
    /// [`second_factor::new_secret`]), once `code` shows their app has it.
    pub async fn enable_totp(
        &self,
        id: OperatorId,
        secret: &str,
        code: &str,
    ) -> Result<Operator, AccountError> {
        let now = self.clock.now();
        if !second_factor::valid_secret(secret) {
            return Err(
                DomainError::invalid("secret", "invalid_secret", "not a valid secret").into(),
            );
        }
        let Some(step) = second_factor::matching_step(secret, code, now) else {
            return Err(wrong_code());
        };
        let op = self.store.operator(id).await?;
        let change = Change::new("operator.totp_on", "operator", now)
            .object(id.get())
            .merchant(op.merchant_id)
            .after(&serde_json::json!({ "second_factor": true }));
        let op = audit::change(change, self.store.set_operator_totp(id, Some(secret), now)).await?;
        self.store.use_totp_step(id, step).await?;
        Ok(op)
    }

    /// Turns off operator `id`'s second factor (an admin's help for a lost phone, or the
    /// person with a current code: the caller checks which).
    pub async fn disable_totp(&self, id: OperatorId) -> Result<Operator, AccountError> {
        let now = self.clock.now();
        let op = self.store.operator(id).await?;
        let change = Change::new("operator.totp_off", "operator", now)
            .object(id.get())
            .merchant(op.merchant_id)
            .after(&serde_json::json!({ "second_factor": false }));
        Ok(audit::change(change, self.store.set_operator_totp(id, None, now)).await?)
    }

    /// Whether `code` is a current code of operator `id`'s second factor (used up if so).
    pub async fn check_code(&self, id: OperatorId, code: &str) -> Result<bool, AccountError> {
        let Some(secret) = self.store.operator_totp(id).await? else {
            return Ok(false);
        };
        match second_factor::matching_step(&secret, code, self.clock.now()) {
            Some(step) => Ok(self.store.use_totp_step(id, step).await?),
            None => Ok(false),
        }
    }
}

/// A valid hash of a random password nobody knows: verifying against it takes the time a
/// real verification takes, for emails that have no account or no password.
const UNKNOWN: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$v2Uc9ZAkUgQmdUgbqfUiFQ/pyBvW7lEGUDr6mfzQMcQ";

/// What a set-password token is stored as.
fn token_hash(token: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes()).into()
}

fn wrong_code() -> AccountError {
    DomainError::invalid(
        "code",
        "code_wrong",
        "this is not the code your app shows now",
    )
    .into()
}

/// The audit trail's change of operator `before` into `after`: its name, role and whether
/// it is disabled, where they differ.
fn operator_change(
    action: &'static str,
    before: &Operator,
    after: &Operator,
    now: Timestamp,
) -> Change {
    let state = |o: &Operator| serde_json::json!({"name": o.name, "role": o.role, "disabled": o.disabled_at.is_some()});
    Change::new(action, "operator", now)
        .object(before.id.get())
        .merchant(before.merchant_id)
        .before(&state(before))
        .after(&state(after))
        .only_differences()
}

/// A password set for `op` (never the password, nor its hash).
fn password_change(op: &Operator, now: Timestamp) -> Change {
    Change::new("operator.password", "operator", now)
        .object(op.id.get())
        .merchant(op.merchant_id)
        .after(&serde_json::json!({ "password": "changed" }))
}

/// `password`, checked against the policy, as an argon2id PHC string.
pub async fn hash_password(password: &str) -> Result<String, AccountError> {
    check_password(password)?;
    let password = password.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut salt = [0u8; 16];
        rand::fill(&mut salt);
        let salt =
            SaltString::encode_b64(&salt).map_err(|e| AccountError::Hashing(e.to_string()))?;
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| AccountError::Hashing(e.to_string()))
    })
    .await
    .map_err(|e| AccountError::Hashing(e.to_string()))?
}

/// Whether `password` is the one `hash` (a PHC string) was made from; false for a hash that
/// does not parse.
pub async fn verify_password(hash: String, password: String) -> bool {
    tokio::task::spawn_blocking(move || {
        PasswordHash::new(&hash).is_ok_and(|parsed| {
            Argon2::default()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok()
        })
    })
    .await
    .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hash_verifies_its_password_only() {
        let hash = hash_password("a long enough passphrase").await.unwrap();
        assert!(
            hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{hash}"
        );
        assert!(verify_password(hash.clone(), "a long enough passphrase".into()).await);
        assert!(!verify_password(hash.clone(), "a long enough passphrasE".into()).await);
        let again = hash_password("a long enough passphrase").await.unwrap();
        assert_ne!(hash, again, "each hash has its own salt");
        assert!(!verify_password("not a hash".into(), "x".into()).await);
    }

    #[tokio::test]
    async fn the_policy_is_checked_before_hashing() {
        let short = hash_password("short").await.unwrap_err();
        assert!(matches!(short, AccountError::Invalid(_)), "{short:?}");
    }

    #[tokio::test]
    async fn the_unknown_hash_parses_and_matches_nothing_common() {
        assert!(PasswordHash::new(UNKNOWN).is_ok());
        assert!(!verify_password(UNKNOWN.into(), "password1234".into()).await);
    }
}
