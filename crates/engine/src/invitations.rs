//! Merchants invite people to their teams (issue 61 point 8). A merchant never creates an
//! account itself: that would tell it whether an address has one already, on another
//! merchant or on the platform (the email is unique across coupond). It asks for an
//! invitation instead, and every well-formed request gets the same answer whatever the address:
//! an invitation, pending. The one-time link goes only to the address, by email, queued in the
//! invitation's own transaction; whoever holds it chooses a password and the account is made
//! then. An address that has an account by then learns so on the link's page (only the
//! address's owner reads it); the merchant sees the invitation stay pending until it expires.
//!
//! Hence invitations need the email channel, carrying `operator_invited`: without it every
//! request is refused alike ([`AccountError::NoEmail`]) and the platform adds merchant staff.

use std::sync::Arc;

use coupond_domain::messaging::{Channel, MessageKind, Vars};
use coupond_domain::{check_password, Invitation, MerchantId, Operator, OperatorDraft};
use coupond_store::audit::{self, Change};
use coupond_store::{NewOutbound, Store};

use crate::accounts::{hex, one_time_token, token_hash, AccountError, HashGate};
use crate::clock::Clock;
use crate::messaging::{MessagingRules, Texts};

/// How long an invitation's link works.
pub const INVITATION_TTL: time::Duration = time::Duration::hours(72);

/// The most invitations of one merchant pending at once; the next is refused
/// ([`AccountError::TooManyInvitations`]) until one is accepted or expires. It bounds the
/// email a merchant can make coupond send to addresses of its choosing.
pub const MAX_PENDING: u32 = 20;

/// Merchants' invitations: made, listed, accepted. Cheap to clone.
#[derive(Clone)]
pub struct Invitations {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    hashes: HashGate,
    rules: MessagingRules,
    /// The console's public root, which the links start with.
    public_url: String,
}

impl std::fmt::Debug for Invitations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Invitations")
            .field("public_url", &self.public_url)
            .finish_non_exhaustive()
    }
}

impl Invitations {
    /// Invitations sent by the email channel of `rules` (if any carries `operator_invited`),
    /// with links under `public_url`, passwords hashed under `hashes`.
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        hashes: HashGate,
        rules: MessagingRules,
        public_url: &str,
    ) -> Self {
        Invitations {
            store,
            clock,
            hashes,
            rules,
            public_url: public_url.trim_end_matches('/').to_owned(),
        }
    }

    /// Whether invitations can be sent (an email channel carries them).
    pub fn available(&self) -> bool {
        self.rules
            .channel(Channel::Email)
            .is_some_and(|c| c.kinds.contains(&MessageKind::OperatorInvited))
    }

    /// Invites `draft`'s address to its merchant's team: stores the invitation and queues
    /// the email with its link, answering alike whether or not the address has an account.
    pub async fn invite(&self, draft: &OperatorDraft) -> Result<Invitation, AccountError> {
        if !self.available() {
            return Err(AccountError::NoEmail);
        }
        let merchant = draft.merchant_id().ok_or(AccountError::NoMerchant)?;
        let merchant_name = self.store.merchant(merchant).await?.name;
        let (token, hash) = one_time_token();
        let now = self.clock.now();
        let expires = now.plus(INVITATION_TTL);
        let email = self
            .email(draft, &merchant_name, &token, &hash, expires)
            .await?;
        let change = Change::new("operator.invite", "invitation", now)
            .merchant(Some(merchant))
            .after(&serde_json::json!({
                "email": draft.email(), "name": draft.name(), "role": draft.role(),
                "merchant_id": merchant, "expires_at": expires,
            }));
        let write = self
            .store
            .insert_invitation(draft, &hash, expires, &email, MAX_PENDING, now);
        audit::change(change, write).await.map_err(|e| match e {
            coupond_store::StoreError::Conflict(coupond_store::Conflict::Limit) => {
                AccountError::TooManyInvitations
            }
            e => e.into(),
        })
    }

    /// The email that carries the link, in the platform's locale and zone.
    async fn email(
        &self,
        draft: &OperatorDraft,
        merchant_name: &str,
        token: &str,
        hash: &[u8; 32],
        expires: coupond_domain::Timestamp,
    ) -> Result<NewOutbound, AccountError> {
        let readers = &self.rules.readers;
        let texts = Texts::load(&self.store, &readers.locale).await?;
        let (text, _) = texts.pick(MessageKind::OperatorInvited, None);
        let mut vars = Vars::new();
        vars.insert("merchant", merchant_name.to_owned());
        vars.insert("role", draft.role().as_str().to_owned());
        vars.insert(
            "link",
            format!("{}/console/invitation/{token}", self.public_url),
        );
        vars.insert("valid_until", readers.zone.format(expires));
        let filled = text.render(&vars);
        Ok(NewOutbound {
            channel: Channel::Email,
            key: format!("invitation:{}", hex(hash)),
            user_id: None,
            kind: MessageKind::OperatorInvited,
            address: draft.email().as_str().to_owned(),
            zone: readers.zone,
            subject: filled.subject,
            body: filled.body,
            due_at: self.clock.now(),
        })
    }

    /// The invitation `token` opens, if it is neither accepted nor expired.
    pub async fn open(&self, token: &str) -> Result<Invitation, AccountError> {
        let now = self.clock.now();
        let found = self.store.live_invitation(&token_hash(token), now).await?;
        found.ok_or(AccountError::ResetInvalid)
    }

    /// Accepts the invitation `token` opens with `password`: the account is made, signed in
    /// to by nobody yet. The token is checked before the password is hashed (anyone may post
    /// this form). An address that has an account by now is [`AccountError::EmailTaken`]
    /// (said only to the link's holder), and the invitation stays as it was.
    pub async fn accept(&self, token: &str, password: &str) -> Result<Operator, AccountError> {
        check_password(password)?;
        let invitation = self.open(token).await?;
        let hash = self.hashes.hash(password).await?;
        let now = self.clock.now();
        let change = Change::new("operator.create", "operator", now)
            .merchant(Some(invitation.merchant_id))
            .after(&serde_json::json!({
                "email": invitation.email, "name": invitation.name, "role": invitation.role,
                "merchant_id": invitation.merchant_id, "password_set": true,
                "invitation_id": invitation.id,
            }));
        let key = token_hash(token);
        let write = self.store.accept_invitation(&key, &hash, now);
        audit::change(change, write)
            .await?
            .ok_or(AccountError::ResetInvalid)
    }

    /// Invitations by id after `after` (one merchant's with `merchant`).
    pub async fn list(
        &self,
        merchant: Option<MerchantId>,
        after: Option<i64>,
        limit: u32,
    ) -> Result<Vec<Invitation>, AccountError> {
        Ok(self.store.list_invitations(merchant, after, limit).await?)
    }
}
