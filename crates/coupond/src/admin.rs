//! One-shot subcommands: `migrate`, `keys`, `token`, `openapi`, `audit`.

use anyhow::Context;
use coupond_api::auth::{issue_key, JwtKeys};
use coupond_domain::{MerchantId, Timestamp, UserId};
use coupond_engine::{Clock, SystemClock};
use coupond_store::{Role, StoreError};

use crate::cli::{AuditArgs, KeysCommand, TokenArgs};
use crate::config::{redact_url, Config};
use crate::db;

fn now() -> Timestamp {
    SystemClock.now()
}

pub async fn migrate(config: &Config) -> anyhow::Result<()> {
    let (store, found) = db::open_with_schema(config, db::Open::Migrate).await?;
    store.close().await;
    let said = db::migrated(found, db::Open::Migrate);
    println!("{}: {said}", redact_url(&config.database.url));
    Ok(())
}

/// `coupond audit`: every invariant check on the database.
pub async fn audit(config: &Config, args: AuditArgs) -> anyhow::Result<()> {
    let store = db::open_as(config, db::Open::Existing).await?;
    let grace = time::Duration::try_from(args.grace).context("grace is too long")?;
    let found = store.audit(SystemClock.now(), grace).await;
    store.close().await;
    let found = found?;
    for v in &found {
        println!("violation [{}] {}: {}", v.check, v.subject, v.detail);
    }
    println!(
        "audit of {}: {} violation(s)",
        redact_url(&config.database.url),
        found.len()
    );
    anyhow::ensure!(
        found.is_empty(),
        "the audit found {} violation(s)",
        found.len()
    );
    Ok(())
}

pub async fn keys(config: &Config, cmd: KeysCommand) -> anyhow::Result<()> {
    // Creating the first key is how a new installation starts, so it may create the database;
    // listing and revoking only use one that exists.
    let how = match cmd {
        KeysCommand::Create { .. } => db::Open::Migrate,
        _ => db::Open::Existing,
    };
    let store = db::open_as(config, how).await?;
    let result = match cmd {
        KeysCommand::Create {
            role,
            merchant,
            label,
        } => {
            let role = Role::parse(&role).context("role must be platform, merchant or service")?;
            let merchant_id = match (role, merchant) {
                (Role::Merchant, Some(id)) => {
                    Some(MerchantId::new(id).map_err(anyhow::Error::msg)?)
                }
                (Role::Merchant, None) => anyhow::bail!("--role merchant needs --merchant ID"),
                (_, Some(_)) => anyhow::bail!("--merchant is only for --role merchant"),
                (_, None) => None,
            };
            let (stored, secret) =
                match issue_key(store.as_ref(), role, merchant_id, label, now()).await {
                    Ok(k) => k,
                    Err(StoreError::NotFound) => {
                        anyhow::bail!("no merchant with id {}", merchant_id.map_or(0, |m| m.get()))
                    }
                    Err(e) => return Err(e.into()),
                };
            eprintln!(
                "created key {} ({role}); it is shown once, store it now:",
                stored.id
            );
            println!("{secret}");
            Ok(())
        }
        KeysCommand::List => {
            for k in store.list_api_keys().await? {
                let merchant = k
                    .merchant_id
                    .map(|m| format!(" merchant={m}"))
                    .unwrap_or_default();
                let revoked = k
                    .revoked_at
                    .map(|t| format!(" revoked_at={t}"))
                    .unwrap_or_default();
                println!(
                    "{}\t{}…\t{}{}\tcreated_at={}{}\t{}",
                    k.id, k.prefix, k.role, merchant, k.created_at, revoked, k.label
                );
            }
            Ok(())
        }
        KeysCommand::Revoke { id } => {
            match coupond_engine::keys::revoke(store.as_ref(), id, None, now()).await {
                Ok(k) => {
                    println!(
                        "key {} revoked at {}",
                        k.id,
                        k.revoked_at.unwrap_or_else(now)
                    );
                    // The notice is signed with the secret the instances share.
                    match db::jwt_secret(store.as_ref(), config.auth.jwt_secret.as_ref()).await {
                        Ok(secret) => crate::brokers::tell_keys_changed(config, &secret).await,
                        Err(e) => eprintln!(
                            "warning: the running instances could not be told ({e:#}); they \
                         refuse the key within auth.cache_ttl"
                        ),
                    }
                    Ok(())
                }
                Err(StoreError::NotFound) => Err(anyhow::anyhow!("no key with id {id}")),
                Err(e) => Err(e.into()),
            }
        }
    };
    store.close().await;
    result
}

pub async fn token(config: &Config, args: TokenArgs) -> anyhow::Result<()> {
    let user = UserId::parse(&args.user).map_err(anyhow::Error::msg)?;
    let ttl = time::Duration::try_from(args.ttl).context("ttl is too long")?;
    anyhow::ensure!(ttl.whole_seconds() >= 1, "ttl must be at least one second");
    anyhow::ensure!(
        args.ttl <= config.auth.max_token_lifetime,
        "ttl must be at most max_token_lifetime ({}); the server refuses longer-lived tokens",
        humantime::format_duration(config.auth.max_token_lifetime)
    );
    let store = db::open_as(config, db::Open::Existing).await?;
    let secret = db::jwt_secret(store.as_ref(), config.auth.jwt_secret.as_ref()).await;
    store.close().await;
    let token = JwtKeys::new(&secret?)
        .mint(&user, now(), ttl)
        .map_err(|e| anyhow::anyhow!("minting the token: {e:?}"))?;
    println!("{token}");
    Ok(())
}

pub fn openapi() -> anyhow::Result<()> {
    emit(&format!("{}\n", coupond_api::openapi::document_json()))
}

/// Writes `text` to stdout; a reader that stopped reading (`coupond openapi | head`) is no
/// error: the output was simply not wanted further.
pub fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}
