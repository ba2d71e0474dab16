//! Operator accounts at the storage boundary (issue 32): people of the platform and of
//! merchants who sign in with an email and a password of their own, and the one-time tokens
//! that let them choose a password.
//!
//! Passwords are stored only as PHC strings (`$argon2id$...`) that the caller made; reset
//! tokens only as their SHA-256, so a copy of the database can neither sign in nor reset.

use async_trait::async_trait;
use coupond_domain::{
    Email, MerchantId, Operator, OperatorDraft, OperatorId, OperatorRole, Timestamp,
};

use crate::StoreResult;

/// Operator accounts and password resets; each method one transaction.
#[async_trait]
pub trait OperatorStore: Send + Sync {
    /// Stores a new operator, with its password hash if it has one yet. An email already
    /// taken is [`Conflict::Unique`](crate::Conflict::Unique); a merchant that does not exist,
    /// [`Conflict::Reference`](crate::Conflict::Reference).
    async fn insert_operator(
        &self,
        d: &OperatorDraft,
        password_hash: Option<&str>,
        now: Timestamp,
    ) -> StoreResult<Operator>;

    /// Operator `id`; [`StoreError::NotFound`](crate::StoreError::NotFound) if none.
    async fn operator(&self, id: OperatorId) -> StoreResult<Operator>;

    /// The operator signing in as `email`, with its password hash (a PHC string) if it has
    /// one; `None` if no operator has that address.
    async fn operator_by_email(
        &self,
        email: &Email,
    ) -> StoreResult<Option<(Operator, Option<String>)>>;

    /// Up to `limit` operators by id, after id `after`: with `Some(m)`, merchant `m`'s staff
    /// only; with `None`, every operator.
    async fn list_operators(
        &self,
        merchant: Option<MerchantId>,
        after: Option<i64>,
        limit: u32,
    ) -> StoreResult<Vec<Operator>>;

    /// Disables operator `id` (keeping the first instant it was disabled) and ends its
    /// console sessions, or enables it again. The version moves on only when the state
    /// changes. `NotFound` if there is no such operator.
    async fn set_operator_disabled(
        &self,
        id: OperatorId,
        disabled: bool,
        now: Timestamp,
    ) -> StoreResult<Operator>;

    /// Renames operator `id` and/or gives it another role (fields left `None` keep their
    /// value); the version moves on. The caller checks the new name
    /// ([`check_operator_name`](coupond_domain::check_operator_name)) and that the role stays
    /// on the operator's side ([`OperatorRole::check_change`]), answering a refusal as a
    /// domain error; a change across sides reaching the store is refused here as
    /// [`StoreError::Other`](crate::StoreError::Other). `NotFound` if there is no such
    /// operator.
    async fn update_operator(
        &self,
        id: OperatorId,
        name: Option<&str>,
        role: Option<OperatorRole>,
        now: Timestamp,
    ) -> StoreResult<Operator>;

    /// Sets operator `id`'s password hash (a PHC string), ends its console sessions and drops
    /// its other password reset tokens; the version moves on. `NotFound` if there is no such
    /// operator.
    async fn set_operator_password(
        &self,
        id: OperatorId,
        hash: &str,
        now: Timestamp,
    ) -> StoreResult<()>;

    /// Stores a password reset token for operator `id` by its SHA-256, valid until
    /// `expires_at`. An unknown operator is
    /// [`Conflict::Reference`](crate::Conflict::Reference); a hash already stored,
    /// [`Conflict::Unique`](crate::Conflict::Unique).
    async fn insert_password_reset(
        &self,
        token_hash: &[u8; 32],
        id: OperatorId,
        expires_at: Timestamp,
    ) -> StoreResult<()>;

    /// Takes the reset token whose SHA-256 is `token_hash`: deletes it, so it works once, and
    /// returns its operator if it had not expired at `now` (`None` if absent or expired).
    /// Expired tokens of every operator are dropped on the way.
    async fn take_password_reset(
        &self,
        token_hash: &[u8; 32],
        now: Timestamp,
    ) -> StoreResult<Option<OperatorId>>;

    /// Sets operator `id`'s second-factor secret (base32), or removes it (`None`); no code
    /// has been used for it yet. The version moves on. `NotFound` if there is no such
    /// operator.
    async fn set_operator_totp(
        &self,
        id: OperatorId,
        secret: Option<&str>,
        now: Timestamp,
    ) -> StoreResult<Operator>;

    /// Operator `id`'s second-factor secret, if it has one.
    async fn operator_totp(&self, id: OperatorId) -> StoreResult<Option<String>>;

    /// Records that a code of time step `step` signed operator `id` in: `true` if no code of
    /// this step or a later one had (of two racing uses of one code, one gets `true`).
    async fn use_totp_step(&self, id: OperatorId, step: i64) -> StoreResult<bool>;
}
