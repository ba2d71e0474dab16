//! The demo's operator accounts: one per role, each start with a fresh random password (so the
//! passwords printed are the only ones that work, as with the demo keys).

use coupond_domain::{Email, MerchantId, OperatorDraft, OperatorRole};
use coupond_engine::accounts::{AccountError, Accounts};

/// Makes sure each demo account exists with a new password; the lines that name them.
pub async fn refresh(accounts: &Accounts, merchant: MerchantId) -> anyhow::Result<Vec<String>> {
    let mut lines = vec![
        "# console accounts (email and password), each with its role's rights: admin, marketing, \
         support and finance for the platform, owner and staff for merchant 1"
            .to_owned(),
    ];
    for role in OperatorRole::ALL {
        let email = Email::parse(&format!("{}@demo.coupond.example", role.as_str()))?;
        let merchant = (!role.is_platform()).then_some(merchant);
        let password = random_password();
        let id = match accounts.by_email(&email).await {
            Ok(op) => {
                accounts.set_password(op.id, &password).await?;
                accounts.set_disabled(op.id, false).await?;
                op.id
            }
            Err(AccountError::NotFound) => {
                let name = format!("Demo {}", role.as_str());
                let draft = OperatorDraft::new(email.clone(), name, role, merchant)?;
                accounts.add(&draft, Some(&password)).await?.id
            }
            Err(e) => return Err(e.into()),
        };
        lines.push(format!("#   {email} {password}   (operator {id})"));
    }
    Ok(lines)
}

/// 20 random letters and digits (about 119 bits).
fn random_password() -> String {
    const ALPHABET: &[u8] = b"abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    (0..20)
        .map(|_| ALPHABET[rand::random_range(0..ALPHABET.len())] as char)
        .collect()
}
