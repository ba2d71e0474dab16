//! Who is calling, as the application layer sees it: a [`Principal`] (the platform, a
//! merchant, a service key or a user) and its [`Role`]. The API learns it from a credential,
//! the console from its session; both pass it to every call.

use coupond_domain::{Area, MerchantId, UserId};
use coupond_store::audit::Who;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::AppError;

/// The roles a route can admit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Platform,
    Merchant,
    Service,
    User,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Platform, Role::Merchant, Role::Service, Role::User];
}

/// The authenticated caller of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Principal {
    Platform,
    Merchant(MerchantId),
    /// A service key, by its id.
    Service(i64),
    User(UserId),
}

impl Principal {
    pub fn role(&self) -> Role {
        match self {
            Principal::Platform => Role::Platform,
            Principal::Merchant(_) => Role::Merchant,
            Principal::Service(_) => Role::Service,
            Principal::User(_) => Role::User,
        }
    }

    /// Who this caller is in operation logs: the person, when an operator account is acting
    /// in this task (the route guard says who), else the caller's role.
    pub fn actor(&self) -> coupond_domain::Actor {
        if let Some(Who::Operator { id, .. }) = coupond_store::audit::current().map(|c| c.who) {
            return coupond_domain::Actor::Operator(id);
        }
        match self {
            Principal::Platform => coupond_domain::Actor::Platform,
            Principal::Merchant(m) => coupond_domain::Actor::Merchant(*m),
            Principal::Service(key) => coupond_domain::Actor::ServiceKey(*key),
            Principal::User(u) => coupond_domain::Actor::User(u.clone()),
        }
    }

    /// The caller as a key for what is kept per caller (idempotency keys, uploads):
    /// `user:<id>`, `merchant:<id>`, `platform` or `service` (every service key: a retry
    /// under a rotated key still finds its answer).
    pub fn scope(&self) -> String {
        match self {
            Principal::User(u) => format!("user:{u}"),
            Principal::Merchant(m) => format!("merchant:{m}"),
            Principal::Platform => "platform".to_owned(),
            Principal::Service(_) => "service".to_owned(),
        }
    }

    /// The merchant this caller is bound to, if it is a merchant.
    pub fn merchant(&self) -> Option<MerchantId> {
        match self {
            Principal::Merchant(m) => Some(*m),
            _ => None,
        }
    }

    /// The signed-in user, for the `/v1/me/...` routes; 403 for any other caller.
    pub fn me(&self) -> Result<&UserId, AppError> {
        match self {
            Principal::User(u) => Ok(u),
            _ => Err(AppError::Forbidden),
        }
    }
}

/// Whether this call's caller may act in `area`: an operator account as its role allows
/// ([`coupond_domain::OperatorRole::may`]); keys and users wherever their route roles admit
/// them (the guard checked those). For views that tell the caller what it may do now.
pub fn may_act(area: Area) -> bool {
    match coupond_store::audit::current().map(|c| c.who) {
        Some(Who::Operator { role, .. }) => role.may(area),
        _ => true,
    }
}

/// A caller as a front door identified it: whom it acts as, and who it is in the audit trail
/// (the operator account, the key, the user).
#[derive(Clone, Debug)]
pub struct Identity {
    pub principal: Principal,
    pub who: Who,
}

/// Who may call an operation: the roles it admits and the area an operator account's role
/// must be allowed to act in ([`coupond_domain::OperatorRole::may`]). Declared once per
/// operation; the API's route table and the console both check it through [`App::acting`].
///
/// [`App::acting`]: crate::App::acting
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub roles: &'static [Role],
    pub area: Area,
}

/// The platform's and merchants' campaign work (templates, codes, bindings, messages): their
/// keys, and operator accounts whose role runs campaigns.
pub const CAMPAIGN_WORK: Access = Access {
    roles: roles::PLATFORM_MERCHANT,
    area: Area::Campaigns,
};

/// Reading the platform's and merchants' campaigns (each sees its own): every operator role
/// reads.
pub const CAMPAIGN_READ: Access = Access {
    roles: roles::PLATFORM_MERCHANT,
    area: Area::Read,
};

/// The sets of roles operations admit.
pub mod roles {
    use super::Role;

    pub const PLATFORM: &[Role] = &[Role::Platform];
    pub const MERCHANT: &[Role] = &[Role::Merchant];
    pub const PLATFORM_MERCHANT: &[Role] = &[Role::Platform, Role::Merchant];
    pub const ANYONE: &[Role] = &[Role::Platform, Role::Merchant, Role::Service, Role::User];
    pub const USER: &[Role] = &[Role::User];
    pub const SERVICE: &[Role] = &[Role::Service];
    pub const USER_SERVICE: &[Role] = &[Role::User, Role::Service];
    pub const PLATFORM_MERCHANT_SERVICE: &[Role] = &[Role::Platform, Role::Merchant, Role::Service];
    pub const PLATFORM_MERCHANT_USER: &[Role] = &[Role::Platform, Role::Merchant, Role::User];
    pub const PLATFORM_SERVICE: &[Role] = &[Role::Platform, Role::Service];
}
