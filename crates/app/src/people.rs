//! The people who sign into the console. The platform manages everyone; a merchant manages
//! its own staff (`owner` and `staff` of its merchant) and nobody else's. A new account made
//! by the platform comes with a one-time set-password link, valid for an hour: passwords
//! never travel in requests. A merchant invites instead: the link goes only to the address,
//! so the answer is the same whether the address has an account anywhere or not. Everything
//! goes through the engine's `Accounts` and `Invitations`.

use coupond_domain::{
    Area, Email, Invitation, MerchantId, Operator, OperatorDraft, OperatorId, OperatorRole,
    Timestamp,
};
use coupond_engine::accounts::{OperatorChange, RESET_TTL};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::caller::{roles, Access, Principal};
use crate::context::App;
use crate::error::{AppError, AppResult};
use crate::pages::{finish, PageOf, PageRequest};

/// Who may see, add, invite and change people: the platform's and merchants' admins.
pub const MANAGE: Access = Access {
    roles: roles::PLATFORM_MERCHANT,
    area: Area::Admin,
};

/// A new operator.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewOperatorBody {
    #[schema(example = "ada@example.com")]
    pub email: String,
    /// Shown in the console and the audit trail, 1 to 100 characters.
    #[schema(example = "Ada Lovelace")]
    pub name: String,
    /// Platform: `admin`, `marketing`, `support`, `finance`; a merchant's: `owner`, `staff`.
    #[schema(example = "marketing")]
    pub role: OperatorRole,
    /// The merchant of an `owner` or `staff` account (a merchant's key: its own, may be left
    /// out).
    #[schema(value_type = Option<i64>)]
    pub merchant_id: Option<MerchantId>,
}

/// A one-time link that sets an operator's password.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SetPasswordLink {
    /// The console's path; prefix it with the console's address and hand it to the person.
    #[schema(example = "/console/password/0f3c…")]
    pub path: String,
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: Timestamp,
}

/// An operator, with the link that sets their password when one was just made.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct OperatorView {
    #[serde(flatten)]
    pub operator: Operator,
    /// Only in the answer to the request that created the account.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub set_password: Option<SetPasswordLink>,
}

/// What to change; what is left out stays.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OperatorPatch {
    pub name: Option<String>,
    /// Another role on the same side (platform, or the same merchant's).
    pub role: Option<OperatorRole>,
    /// `true` disables the account (its console sessions end at once); `false` enables it.
    pub disabled: Option<bool>,
    /// `false` turns the account's second factor off (a lost phone; the person sets it up
    /// again from their Account page). Only the person turns it on: `true` is 422
    /// `second_factor_by_owner`.
    pub second_factor: Option<bool>,
}

/// A merchant's invitation, as its merchant sees it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct InvitationView {
    #[serde(flatten)]
    pub invitation: Invitation,
    /// `pending`, `accepted` or `expired`.
    #[schema(example = "pending")]
    pub status: String,
}

impl InvitationView {
    /// `invitation` with where it stands at `now`.
    pub fn at(invitation: Invitation, now: Timestamp) -> Self {
        InvitationView {
            status: invitation.status(now).to_owned(),
            invitation,
        }
    }
}

/// What adding a person did: the platform's new account with its set-password link, or a
/// merchant's invitation sent.
#[derive(Debug)]
pub enum Added {
    Account(OperatorView),
    Invited(InvitationView),
}

impl App {
    /// Adds (the platform) or invites (a merchant, its own `owner` or `staff`) a person.
    pub async fn add_operator(&self, p: &Principal, body: NewOperatorBody) -> AppResult<Added> {
        let merchant = match p.merchant() {
            Some(own) if body.merchant_id.is_some_and(|m| m != own) => {
                return Err(AppError::NotFound)
            }
            Some(own) if body.role.is_platform() => {
                return Err(AppError::invalid(
                    "role_not_allowed",
                    "role",
                    format!("a merchant's operators are owner or staff of merchant {own}"),
                ))
            }
            Some(own) => Some(own),
            None => body.merchant_id,
        };
        let email = Email::parse(&body.email)?;
        let draft = OperatorDraft::new(email, body.name, body.role, merchant)?;
        if p.merchant().is_some() {
            let invitation = self.invitations().invite(&draft).await?;
            return Ok(Added::Invited(InvitationView::at(invitation, self.now())));
        }
        let op = self.accounts().add(&draft, None).await?;
        let token = self.accounts().start_reset(op.id).await?;
        let link = SetPasswordLink {
            path: format!("/console/password/{token}"),
            expires_at: self.now().plus(RESET_TTL),
        };
        Ok(Added::Account(OperatorView {
            operator: op,
            set_password: Some(link),
        }))
    }

    /// A page of people by id: the platform's all, or `merchant`'s; a merchant's its own.
    pub async fn operators(
        &self,
        p: &Principal,
        merchant: Option<MerchantId>,
        page: PageRequest,
    ) -> AppResult<PageOf<Operator>> {
        let page = page.page(self.settings())?;
        let merchant = p.merchant().or(merchant);
        let rows = self
            .accounts()
            .list(merchant, page.after, page.limit)
            .await?;
        Ok(finish(rows, page, |o| o.id.get(), |o| o))
    }

    /// Renames person `id`, changes their role (on the same side), disables or enables them,
    /// or turns their second factor off.
    pub async fn update_operator(
        &self,
        p: &Principal,
        id: OperatorId,
        patch: &OperatorPatch,
    ) -> AppResult<Operator> {
        let op = self.accounts().operator(id).await?;
        if p.merchant().is_some() && op.merchant_id != p.merchant() {
            return Err(AppError::NotFound);
        }
        if patch.second_factor == Some(true) {
            return Err(AppError::invalid(
                "second_factor_by_owner",
                "second_factor",
                "only the person turns their second factor on, from their Account page",
            ));
        }
        let change = OperatorChange {
            name: patch.name.as_deref(),
            role: patch.role,
            disabled: patch.disabled,
        };
        let mut updated = self.accounts().update(id, &change).await?;
        if patch.second_factor == Some(false) && updated.has_totp {
            updated = self.accounts().disable_totp(id).await?;
        }
        Ok(updated)
    }

    /// A page of merchants' invitations by id, with where each stands: the platform's all,
    /// or `merchant`'s; a merchant's its own.
    pub async fn operator_invitations(
        &self,
        p: &Principal,
        merchant: Option<MerchantId>,
        page: PageRequest,
    ) -> AppResult<PageOf<InvitationView>> {
        let page = page.page(self.settings())?;
        let merchant = p.merchant().or(merchant);
        let rows = self
            .invitations()
            .list(merchant, page.after, page.limit)
            .await;
        let now = self.now();
        Ok(finish(
            rows?,
            page,
            |i| i.id,
            |i| InvitationView::at(i, now),
        ))
    }
}
