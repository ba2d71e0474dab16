//! Operator accounts: the people who sign into the console, platform staff and merchant staff,
//! each under their own name and role (issue 32). Every front door (the CLI today; the API and
//! the console's sign-in next) goes through [`Accounts`], which applies the domain's rules
//! (email, name, role and merchant, password policy) and hashes passwords with argon2id.
//!
//! A password is only ever kept as an argon2id PHC string (`$argon2id$v=19$m=19456,t=2,p=1$…`,
//! OWASP's parameters: 19 MiB, two passes). Hashing takes tens of milliseconds of one core on
//! purpose, so it runs on tokio's blocking pool, never on a request's worker thread, and at
//! most [`HashGate`]'s number at once: anyone may post a sign-in form, and without a bound a
//! burst of them holds 19 MiB each on a blocking pool of hundreds of threads.

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
    /// Every password check allowed at once is running and none came free within the gate's
    /// wait: try again after `retry_after`.
    #[error("too many password checks at once; try again shortly")]
    Busy { retry_after: std::time::Duration },
    /// No email channel carries invitations, so a merchant cannot invite anyone.
    #[error("this service sends no email, so it cannot send invitations")]
    NoEmail,
    /// The merchant has [`MAX_PENDING`](crate::invitations::MAX_PENDING) invitations pending.
    #[error("too many invitations pending")]
    TooManyInvitations,
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

/// Bounds the argon2 hashes and verifications running at once, so that no number of
/// unauthenticated requests can hold more than `at_once` x 19 MiB for them. A request that
/// gets no permit within `wait` is refused ([`AccountError::Busy`]) rather than queued without
/// end. Cheap to clone: the clones share the permits.
#[derive(Clone, Debug)]
pub struct HashGate {
    // A semaphore, not a pool of threads: the hashes still run on tokio's blocking pool, and
    // each holds a permit for exactly as long as its memory is in use.
    permits: Arc<tokio::sync::Semaphore>,
    wait: std::time::Duration,
}

impl HashGate {
    /// At most `at_once` hashes at a time (0: as many as the cores this process may use),
    /// each request waiting at most `wait` for its turn.
    pub fn new(at_once: usize, wait: std::time::Duration) -> Self {
        let at_once = if at_once == 0 {
            std::thread::available_parallelism().map_or(1, usize::from)
        } else {
            at_once
        };
        HashGate {
            permits: Arc::new(tokio::sync::Semaphore::new(at_once)),
            wait,
        }
    }

    /// Runs `work` on the blocking pool once a permit is free, or refuses as busy.
    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, AccountError> {
        let busy = AccountError::Busy {
            retry_after: self.wait.max(std::time::Duration::from_secs(1)),
        };
        let permit = match tokio::time::timeout(self.wait, self.permits.acquire()).await {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) | Err(_) => return Err(busy),
        };
        let done = tokio::task::spawn_blocking(work).await;
        drop(permit);
        done.map_err(|e| AccountError::Hashing(e.to_string()))
    }

    /// `password`, checked against the policy, as an argon2id PHC string.
    pub async fn hash(&self, password: &str) -> Result<String, AccountError> {
        check_password(password)?;
        let password = password.to_owned();
        self.run(move || phc_hash(&password)).await?
    }
}

impl Default for HashGate {
    /// As many hashes at once as the cores, each waiting at most a second.
    fn default() -> Self {
        HashGate::new(0, std::time::Duration::from_secs(1))
    }
}

/// The accounts' workflows over the store. Cheap to clone.
#[derive(Clone)]
pub struct Accounts {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    hashes: HashGate,
}

impl std::fmt::Debug for Accounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Accounts").finish_non_exhaustive()
    }
}

impl Accounts {
    /// Accounts over `store`, with as many password hashes at once as the cores.
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        Accounts {
            store,
            clock,
            hashes: HashGate::default(),
        }
    }

    /// The same, with password hashes bounded by `hashes`.
    pub fn with_hash_gate(self, hashes: HashGate) -> Self {
        Accounts { hashes, ..self }
    }

    /// Adds an operator, with `password` (checked against the policy, then hashed) or none
    /// yet (a set-password link comes later).
    pub async fn add(
        &self,
        draft: &OperatorDraft,
        password: Option<&str>,
    ) -> Result<Operator, AccountError> {
        let hash = match password {
            Some(p) => Some(self.hashes.hash(p).await?),
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
        let hash = self.hashes.hash(password).await?;
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
        let (token, hash) = one_time_token();
        let now = self.clock.now();
        let expires = now.plus(RESET_TTL);
        let change = Change::new("operator.reset_link", "operator", now)
            .object(id.get())
            .merchant(op.merchant_id)
            .after(&serde_json::json!({ "link_expires_at": expires }));
        let write = self.store.insert_password_reset(&hash, op.id, expires);
        audit::change(change, write).await?;
        Ok(token)
    }

    /// Sets the password of the operator `token` was given for, and uses the token up; its
    /// sessions end; a disabled account's link is refused (and used up). A password the
    /// policy refuses leaves the token usable. The token is
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
        let op = self.store.operator(id).await?;
        if op.disabled_at.is_some() {
            // A link made before the account was disabled opens nothing (it is used up).
            return Err(AccountError::ResetInvalid);
        }
        let hash = self.hashes.hash(password).await?;
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
        let password = password.to_owned();
        let matches = self
            .hashes
            .run(move || password_matches(&hash, &password))
            .await?;
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
    /// [`second_factor::new_secret`]), once `code` shows their app has it. Refused while one
    /// is on: a factor is replaced by turning it off with a current code, then on again.
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
        let op = self.store.operator(id).await?;
        if op.has_totp {
            // Replacing a factor would take the account from whoever holds the current one
            // without its code: turning it off (with a current code) comes first.
            return Err(DomainError::invalid(
                "secret",
                "second_factor_on",
                "a second factor is on already: turn it off with its current code first",
            )
            .into());
        }
        let Some(step) = second_factor::matching_step(secret, code, now) else {
            return Err(wrong_code());
        };
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

/// A fresh one-time token for a link (32 random bytes as 64 hex characters), and what it is
/// stored as ([`token_hash`]).
pub(crate) fn one_time_token() -> (String, [u8; 32]) {
    let mut raw = [0u8; 32];
    rand::fill(&mut raw);
    let token = hex(&raw);
    let hash = token_hash(&token);
    (token, hash)
}

/// `bytes` as lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a set-password or invitation token is stored as.
pub(crate) fn token_hash(token: &str) -> [u8; 32] {
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

/// `password` as an argon2id PHC string with a fresh salt (tens of milliseconds of one core
/// and 19 MiB: call it through a [`HashGate`]).
fn phc_hash(password: &str) -> Result<String, AccountError> {
    let mut salt = [0u8; 16];
    rand::fill(&mut salt);
    let salt = SaltString::encode_b64(&salt).map_err(|e| AccountError::Hashing(e.to_string()))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| AccountError::Hashing(e.to_string()))
}

/// Whether `password` is the one `hash` (a PHC string) was made from; false for a hash that
/// does not parse. As costly as [`phc_hash`].
fn password_matches(hash: &str, password: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_verifies_its_password_only() {
        let hash = phc_hash("a long enough passphrase").unwrap();
        assert!(
            hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{hash}"
        );
        assert!(password_matches(&hash, "a long enough passphrase"));
        assert!(!password_matches(&hash, "a long enough passphrasE"));
        let again = phc_hash("a long enough passphrase").unwrap();
        assert_ne!(hash, again, "each hash has its own salt");
        assert!(!password_matches("not a hash", "x"));
    }

    #[tokio::test]
    async fn the_policy_is_checked_before_hashing() {
        let short = HashGate::default().hash("short").await.unwrap_err();
        assert!(matches!(short, AccountError::Invalid(_)), "{short:?}");
    }

    #[test]
    fn the_unknown_hash_parses_and_matches_nothing_common() {
        assert!(PasswordHash::new(UNKNOWN).is_ok());
        assert!(!password_matches(UNKNOWN, "password1234"));
    }

    /// While every permit is held, a further hash is refused as busy once the wait passes,
    /// and runs again once a permit is free.
    #[tokio::test]
    async fn hashes_past_the_gate_are_refused_as_busy() {
        let gate = HashGate::new(1, std::time::Duration::from_millis(50));
        let (release, held) = std::sync::mpsc::channel::<()>();
        let (started, running) = tokio::sync::oneshot::channel();
        let first = tokio::spawn({
            let gate = gate.clone();
            async move {
                gate.run(move || {
                    started.send(()).unwrap();
                    held.recv().unwrap();
                })
                .await
            }
        });
        running.await.unwrap();
        let refused = gate.run(|| ()).await.unwrap_err();
        assert!(
            matches!(refused, AccountError::Busy { retry_after } if retry_after.as_secs() >= 1),
            "{refused:?}"
        );
        release.send(()).unwrap();
        first.await.unwrap().unwrap();
        gate.run(|| ()).await.expect("a permit is free again");
    }
}
