//! Operator accounts: the people of the platform and of merchants who sign in to run coupond
//! (issue 32), each with an email, a role and a password of their own rather than a shared
//! API key.
//!
//! - [`Email`]: a sign-in address, normalised (trimmed, lowercased) when parsed, so that one
//!   address is stored and compared one way.
//! - [`OperatorRole`]: what an operator may do; platform roles act for the platform, merchant
//!   roles for one merchant.
//! - [`OperatorDraft`]: an operator to create, checked when built; [`Operator`]: a stored one.
//! - [`Invitation`]: a merchant's invitation to join its team, sent to an address by email.
//! - [`check_password`]: the rules a new password keeps; [`check_operator_name`] and
//!   [`OperatorRole::check_change`]: the rules of an edit.

use std::fmt;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::DomainError;
use crate::ids::{MerchantId, OperatorId};
use crate::text::check_text;
use crate::time::Timestamp;

/// An operator's sign-in address: trimmed and lowercased, 3 to 254 bytes, one `@` between a
/// non-empty local part and a domain of dot-separated, non-empty labels (at least two), no
/// whitespace or control characters. Two addresses differing only in case are the same.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, ToSchema)]
#[serde(transparent)]
#[schema(value_type = String, example = "ops@example.com")]
pub struct Email(String);

impl Email {
    /// Most bytes an address may have (RFC 5321's limit on a path, less its brackets).
    pub const MAX_BYTES: usize = 254;

    /// `s` as an address, normalised; field `email` on error.
    pub fn parse(s: &str) -> Result<Email, DomainError> {
        let e = s.trim().to_lowercase();
        if e.len() < 3 || e.len() > Self::MAX_BYTES {
            return Err(DomainError::invalid(
                "email",
                "invalid_length",
                format!("must be 3 to {} bytes", Self::MAX_BYTES),
            ));
        }
        if e.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(DomainError::invalid(
                "email",
                "invalid_characters",
                "must not contain spaces or control characters",
            ));
        }
        let well_formed = match e.split_once('@') {
            Some((local, domain)) => {
                !local.is_empty()
                    && !domain.contains('@')
                    && domain.contains('.')
                    && domain.split('.').all(|label| !label.is_empty())
            }
            None => false,
        };
        if !well_formed {
            return Err(DomainError::invalid(
                "email",
                "invalid_email",
                "must be an address like name@example.com",
            ));
        }
        Ok(Email(e))
    }

    /// The normalised address.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Email {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Email::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What an operator may do. `Admin`, `Marketing`, `Support` and `Finance` act for the
/// platform (no merchant); `Owner` and `Staff` act for one merchant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum OperatorRole {
    /// Everything, operator accounts included.
    Admin,
    /// Activities, templates and issuance.
    Marketing,
    /// Users' coupons: looking them up, revoking, refunding.
    Support,
    /// Reports and reconciliation.
    Finance,
    /// A merchant's own accounts and everything of that merchant.
    Owner,
    /// A merchant's day-to-day work.
    Staff,
}

impl OperatorRole {
    /// Every role, platform roles first.
    pub const ALL: [OperatorRole; 6] = [
        OperatorRole::Admin,
        OperatorRole::Marketing,
        OperatorRole::Support,
        OperatorRole::Finance,
        OperatorRole::Owner,
        OperatorRole::Staff,
    ];

    /// The role's name, as stored and as JSON has it (`"admin"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            OperatorRole::Admin => "admin",
            OperatorRole::Marketing => "marketing",
            OperatorRole::Support => "support",
            OperatorRole::Finance => "finance",
            OperatorRole::Owner => "owner",
            OperatorRole::Staff => "staff",
        }
    }

    /// The role named `s` (exactly as [`OperatorRole::as_str`] writes it).
    pub fn parse(s: &str) -> Option<OperatorRole> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// Whether the role acts for the platform (else for one merchant).
    pub fn is_platform(self) -> bool {
        matches!(
            self,
            OperatorRole::Admin
                | OperatorRole::Marketing
                | OperatorRole::Support
                | OperatorRole::Finance
        )
    }

    /// Whether this role may act in `area` (within what its side may do at all: a merchant's
    /// operators act only on their merchant's things). `admin` and a merchant's `owner` may act
    /// everywhere; `marketing` runs campaigns, `support` helps users (revokes coupons),
    /// `finance` reads; everyone reads; only `admin` and `owner` manage people, keys and
    /// webhooks.
    pub fn may(self, area: Area) -> bool {
        matches!(
            (self, area),
            (OperatorRole::Admin | OperatorRole::Owner, _)
                | (_, Area::Read)
                | (OperatorRole::Marketing, Area::Campaigns)
                | (OperatorRole::Support, Area::Support)
                | (OperatorRole::Staff, Area::Campaigns | Area::Support)
        )
    }

    /// Whether an operator holding this role may be given `to`: only a role of the same side
    /// (platform or merchant), since an operator's merchant never changes. Field `role`.
    pub fn check_change(self, to: OperatorRole) -> Result<(), DomainError> {
        if self.is_platform() == to.is_platform() {
            return Ok(());
        }
        let side = |r: OperatorRole| {
            if r.is_platform() {
                "platform"
            } else {
                "merchant"
            }
        };
        Err(DomainError::invalid(
            "role",
            "role_side_changed",
            format!(
                "a {} operator cannot be given the {} role {to}",
                side(self),
                side(to)
            ),
        ))
    }
}

/// What a request does, as far as operators' roles tell them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Area {
    /// Reading anything the caller's side may see.
    Read,
    /// Changing activities, templates, listings, codes, issuance and user segments.
    Campaigns,
    /// Helping users: revoking a coupon.
    Support,
    /// Managing people, keys, merchants, webhooks and what is shared with merchants.
    Admin,
}

impl fmt::Display for OperatorRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Checks an operator's display name: 1 to 100 characters of visible text (field `name`).
pub fn check_operator_name(name: &str) -> Result<(), DomainError> {
    check_text("name", name, 1, 100)
}

/// An operator to create, checked when built: a valid name, and a merchant exactly when the
/// role is a merchant's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorDraft {
    email: Email,
    name: String,
    role: OperatorRole,
    merchant_id: Option<MerchantId>,
}

impl OperatorDraft {
    /// The draft, or the first rule it breaks (fields `name`, `merchant_id`).
    pub fn new(
        email: Email,
        name: String,
        role: OperatorRole,
        merchant_id: Option<MerchantId>,
    ) -> Result<Self, DomainError> {
        check_operator_name(&name)?;
        match (role.is_platform(), merchant_id) {
            (true, Some(_)) => Err(DomainError::invalid(
                "merchant_id",
                "merchant_not_allowed",
                format!("a platform operator ({role}) has no merchant"),
            )),
            (false, None) => Err(DomainError::invalid(
                "merchant_id",
                "merchant_required",
                format!("a merchant operator ({role}) needs a merchant"),
            )),
            _ => Ok(OperatorDraft {
                email,
                name,
                role,
                merchant_id,
            }),
        }
    }

    /// The sign-in address.
    pub fn email(&self) -> &Email {
        &self.email
    }

    /// The display name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The role.
    pub fn role(&self) -> OperatorRole {
        self.role
    }

    /// The merchant, set exactly when the role is a merchant's.
    pub fn merchant_id(&self) -> Option<MerchantId> {
        self.merchant_id
    }
}

/// A stored operator. Its password hash is never part of it: storage hands that out only to
/// the sign-in check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Operator {
    pub id: OperatorId,
    pub email: Email,
    pub name: String,
    pub role: OperatorRole,
    /// Set exactly when `role` is a merchant's.
    pub merchant_id: Option<MerchantId>,
    /// Whether a password is set (an invited operator has none until they choose one).
    pub has_password: bool,
    /// Whether signing in also takes a one-time code (RFC 6238).
    pub has_totp: bool,
    /// When the operator was disabled: they cannot sign in, and their sessions ended then.
    pub disabled_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Moves on with every change.
    pub version: i64,
}

/// A merchant's invitation for an address to join its team as `role` (issue 61 point 8).
/// Merchants invite rather than create accounts, so that a merchant never learns whether an
/// address has an account elsewhere: the link goes only to the address, and the account is
/// made when its owner accepts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Invitation {
    pub id: i64,
    pub email: Email,
    /// The name the account will carry.
    pub name: String,
    /// `owner` or `staff`.
    pub role: OperatorRole,
    pub merchant_id: MerchantId,
    pub created_at: Timestamp,
    /// The link works until then.
    pub expires_at: Timestamp,
    /// When its owner accepted it (the account exists since).
    pub accepted_at: Option<Timestamp>,
}

impl Invitation {
    /// `pending`, `accepted` or `expired` at `now`.
    pub fn status(&self, now: Timestamp) -> &'static str {
        match self.accepted_at {
            Some(_) => "accepted",
            None if self.expires_at <= now => "expired",
            None => "pending",
        }
    }
}

/// Passwords too common to accept (each of 12 characters or more), one a line.
const COMMON_PASSWORDS: &str = include_str!("common_passwords.txt");

/// Fewest characters a password may have.
pub const PASSWORD_MIN_CHARS: usize = 12;
/// Most characters a password may have (hashing is slow on purpose; this bounds it).
pub const PASSWORD_MAX_CHARS: usize = 128;

/// Checks a new password (field `password`): 12 to 128 characters, not one character
/// repeated, and not one of the well-known passwords (compared ignoring case).
pub fn check_password(p: &str) -> Result<(), DomainError> {
    let chars = p.chars().count();
    if !(PASSWORD_MIN_CHARS..=PASSWORD_MAX_CHARS).contains(&chars) {
        return Err(DomainError::invalid(
            "password",
            "invalid_length",
            format!("must be {PASSWORD_MIN_CHARS} to {PASSWORD_MAX_CHARS} characters"),
        ));
    }
    let mut it = p.chars();
    let first = it.next();
    if it.all(|c| Some(c) == first) {
        return Err(DomainError::invalid(
            "password",
            "repeated_character",
            "must not be one character repeated",
        ));
    }
    let lower = p.to_lowercase();
    let common = COMMON_PASSWORDS
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .any(|l| l.to_lowercase() == lower);
    if common {
        return Err(DomainError::invalid(
            "password",
            "common_password",
            "is one of the most common passwords; choose another",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Area, OperatorRole};

    #[test]
    fn each_role_acts_in_its_areas() {
        use Area::*;
        let areas = [Read, Campaigns, Support, Admin];
        let allowed =
            |r: OperatorRole| -> Vec<Area> { areas.into_iter().filter(|a| r.may(*a)).collect() };
        assert_eq!(allowed(OperatorRole::Admin), areas);
        assert_eq!(allowed(OperatorRole::Owner), areas);
        assert_eq!(allowed(OperatorRole::Marketing), [Read, Campaigns]);
        assert_eq!(allowed(OperatorRole::Support), [Read, Support]);
        assert_eq!(allowed(OperatorRole::Finance), [Read]);
        assert_eq!(allowed(OperatorRole::Staff), [Read, Campaigns, Support]);
    }

    use super::*;

    fn email(s: &str) -> Email {
        Email::parse(s).unwrap()
    }

    #[test]
    fn operator_emails_are_normalised() {
        assert_eq!(email("  Ops@Example.COM ").as_str(), "ops@example.com");
        assert_eq!(email("a@b.c").to_string(), "a@b.c");
        assert_eq!(email("Ops@Example.com"), email("ops@example.com"));
    }

    #[test]
    fn operator_emails_are_checked() {
        for (bad, code) in [
            ("", "invalid_length"),
            ("a@", "invalid_length"),
            ("   ", "invalid_length"),
            ("ops example@x.com", "invalid_characters"),
            ("ops@exa\tmple.com", "invalid_characters"),
            ("ops\u{7}@x.com", "invalid_characters"),
            ("opsexample.com", "invalid_email"),
            ("@example.com", "invalid_email"),
            ("a@b@example.com", "invalid_email"),
            ("ops@localhost", "invalid_email"),
            ("ops@example.", "invalid_email"),
            ("ops@.com", "invalid_email"),
            ("ops@example..com", "invalid_email"),
        ] {
            let e = Email::parse(bad).unwrap_err();
            assert_eq!(
                (e.code, e.field.as_deref()),
                (code, Some("email")),
                "{bad:?}"
            );
        }
        let long = format!("{}@example.com", "a".repeat(254 - 12));
        assert_eq!(long.len(), 254);
        assert!(Email::parse(&long).is_ok());
        assert!(Email::parse(&format!("a{long}")).is_err());
    }

    #[test]
    fn operator_emails_are_json_strings_parsed_on_the_way_in() {
        let e: Email = serde_json::from_str("\"Ops@Example.com\"").unwrap();
        assert_eq!(serde_json::to_string(&e).unwrap(), "\"ops@example.com\"");
        assert!(serde_json::from_str::<Email>("\"not an email\"").is_err());
    }

    #[test]
    fn operator_roles_name_themselves_and_their_side() {
        for r in OperatorRole::ALL {
            assert_eq!(OperatorRole::parse(r.as_str()), Some(r));
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(json, format!("\"{}\"", r.as_str()));
            assert_eq!(serde_json::from_str::<OperatorRole>(&json).unwrap(), r);
        }
        assert_eq!(OperatorRole::parse("Admin"), None);
        let platform: Vec<_> = OperatorRole::ALL
            .into_iter()
            .filter(|r| r.is_platform())
            .map(OperatorRole::as_str)
            .collect();
        assert_eq!(platform, ["admin", "marketing", "support", "finance"]);
    }

    #[test]
    fn operator_roles_change_only_within_their_side() {
        use OperatorRole::*;
        assert!(Admin.check_change(Finance).is_ok());
        assert!(Staff.check_change(Owner).is_ok());
        assert!(Owner.check_change(Owner).is_ok());
        for (from, to) in [(Admin, Owner), (Staff, Support)] {
            let e = from.check_change(to).unwrap_err();
            assert_eq!(
                (e.code, e.field.as_deref()),
                ("role_side_changed", Some("role"))
            );
        }
    }

    #[test]
    fn operator_drafts_pair_roles_with_merchants() {
        let m = MerchantId::new(7).ok();
        let d = OperatorDraft::new(email("o@x.io"), "Olga".into(), OperatorRole::Owner, m).unwrap();
        assert_eq!(
            (d.email().as_str(), d.name(), d.role(), d.merchant_id()),
            ("o@x.io", "Olga", OperatorRole::Owner, m)
        );
        assert!(
            OperatorDraft::new(email("a@x.io"), "Ann".into(), OperatorRole::Admin, None).is_ok()
        );
        let e =
            OperatorDraft::new(email("a@x.io"), "Ann".into(), OperatorRole::Admin, m).unwrap_err();
        assert_eq!(
            (e.code, e.field.as_deref()),
            ("merchant_not_allowed", Some("merchant_id"))
        );
        let e = OperatorDraft::new(email("s@x.io"), "Sam".into(), OperatorRole::Staff, None)
            .unwrap_err();
        assert_eq!(
            (e.code, e.field.as_deref()),
            ("merchant_required", Some("merchant_id"))
        );
    }

    #[test]
    fn operator_names_are_checked() {
        let draft = |name: &str| {
            OperatorDraft::new(email("a@x.io"), name.into(), OperatorRole::Support, None)
        };
        assert!(draft(&"n".repeat(100)).is_ok());
        assert!(draft("李雷").is_ok());
        for bad in ["", "   ", "\u{200B}", "Eve\u{202E}", &"n".repeat(101)] {
            let e = draft(bad).unwrap_err();
            assert_eq!(e.field.as_deref(), Some("name"), "{bad:?}");
        }
        assert!(check_operator_name("Bob").is_ok());
        assert!(check_operator_name("").is_err());
    }

    #[test]
    fn operator_passwords_are_long_enough_and_not_too_long() {
        assert!(check_password("horse-staple-42").is_ok());
        let e = check_password("short-pw-01").unwrap_err();
        assert_eq!(
            (e.code, e.field.as_deref()),
            ("invalid_length", Some("password"))
        );
        // Characters, not bytes: 11 three-byte characters are too few; 12 are enough.
        assert!(check_password(&"密码安全".repeat(3)[..33]).is_err());
        assert!(check_password(&"密码安全".repeat(3)).is_ok());
        assert!(check_password(&"ab".repeat(64)).is_ok());
        assert_eq!(
            check_password(&("ab".repeat(64) + "c")).unwrap_err().code,
            "invalid_length"
        );
        assert_eq!(
            check_password(&"é".repeat(129)).unwrap_err().code,
            "invalid_length"
        );
    }

    #[test]
    fn operator_passwords_are_not_common_or_one_character() {
        for common in [
            "password1234",
            "PassWord1234",
            "qwerty123456",
            "1Q2W3E4R5T6Y",
        ] {
            let e = check_password(common).unwrap_err();
            assert_eq!(
                (e.code, e.field.as_deref()),
                ("common_password", Some("password"))
            );
        }
        for repeated in ["aaaaaaaaaaaa", "000000000000000", &"é".repeat(20)] {
            assert_eq!(
                check_password(repeated).unwrap_err().code,
                "repeated_character"
            );
        }
        assert!(check_password("aaaaaaaaaaab").is_ok());
    }

    #[test]
    fn operator_common_password_list_is_well_formed() {
        let entries: Vec<&str> = COMMON_PASSWORDS
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect();
        assert!(entries.len() >= 100, "{}", entries.len());
        for p in entries {
            assert!(
                p.chars().count() >= PASSWORD_MIN_CHARS,
                "{p:?} is too short to matter"
            );
            assert_eq!(
                check_password(p).unwrap_err().code,
                "common_password",
                "{p:?}"
            );
        }
    }
}
