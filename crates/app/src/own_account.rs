//! A person's own account, as the console's pages for it use it: signing in, reading one's own
//! account, turning on a second factor and checking its codes, setting a password from a
//! link, and opening and accepting an invitation. No caller's role admits these: the person
//! proves who they are (a password, a code, a link's token), and the engine's accounts and
//! invitations ([`coupond_engine::accounts`], [`coupond_engine::invitations`]) check it. Their
//! refusals stay [`AccountError`]s, which the pages tell apart (a used link, a busy password
//! check with its wait).

use coupond_domain::{Email, Invitation, Operator, OperatorId, Zone};
use coupond_engine::self_audit::TimeOfDay;

use crate::context::App;

/// What an account's own flows refuse with.
pub use coupond_engine::accounts::AccountError;

impl App {
    /// The operator `email` names, if `password` (and `code`, once they have a second factor)
    /// is theirs; `None` otherwise, whatever the reason.
    pub async fn sign_in(
        &self,
        email: &Email,
        password: &str,
        code: Option<&str>,
    ) -> Result<Option<Operator>, AccountError> {
        self.accounts().sign_in(email, password, code).await
    }

    /// Operator `id`'s account, for the signed-in person it is.
    pub async fn own_account(&self, id: OperatorId) -> Result<Operator, AccountError> {
        self.accounts().operator(id).await
    }

    /// Turns on operator `id`'s second factor with `secret`, once `code` shows their app has
    /// it.
    pub async fn turn_on_second_factor(
        &self,
        id: OperatorId,
        secret: &str,
        code: &str,
    ) -> Result<Operator, AccountError> {
        self.accounts().enable_totp(id, secret, code).await
    }

    /// Turns operator `id`'s second factor off if `code` is their current one: `None` if it
    /// is not, and nothing changes.
    pub async fn turn_off_second_factor(
        &self,
        id: OperatorId,
        code: &str,
    ) -> Result<Option<Operator>, AccountError> {
        if !self.accounts().check_code(id, code).await? {
            return Ok(None);
        }
        self.accounts().disable_totp(id).await.map(Some)
    }

    /// Sets the password of the account a set-password link's `token` names; the link is
    /// used up.
    pub async fn set_password_from_link(
        &self,
        token: &str,
        password: &str,
    ) -> Result<OperatorId, AccountError> {
        self.accounts().finish_reset(token, password).await
    }

    /// The invitation `token` names, while it can be accepted.
    pub async fn open_invitation(&self, token: &str) -> Result<Invitation, AccountError> {
        self.invitations().open(token).await
    }

    /// Accepts the invitation `token` names with `password`: the account it makes.
    pub async fn accept_invitation(
        &self,
        token: &str,
        password: &str,
    ) -> Result<Operator, AccountError> {
        self.invitations().accept(token, password).await
    }

    /// When the self-audit runs by itself: its time of day and zone, if at all.
    pub fn audit_schedule(&self) -> Option<(TimeOfDay, Zone)> {
        self.auditor().schedule()
    }
}
