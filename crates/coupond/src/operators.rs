//! `coupond operators`: operator accounts from the command line, for the first platform admin
//! of a new installation and for scripts (adding, listing, disabling a leaver, a link that
//! sets a forgotten password). Everything
//! goes through the engine's [`Accounts`], as the API's and the console's doors will.

use std::io::BufRead;
use std::sync::Arc;

use anyhow::Context;
use coupond_domain::{Email, MerchantId, Operator, OperatorDraft, OperatorRole};
use coupond_engine::accounts::{AccountError, Accounts, RESET_TTL};
use coupond_engine::SystemClock;

use crate::cli::OperatorsCommand;
use crate::config::Config;
use crate::db;

/// The most operators `list` prints.
const LIST_PAGE: u32 = 200;

pub async fn run(config: &Config, cmd: OperatorsCommand) -> anyhow::Result<()> {
    // Adding the first admin is how a new installation starts, so it may create the database;
    // the others only use one that exists.
    let how = match cmd {
        OperatorsCommand::Add { .. } => db::Open::Migrate,
        _ => db::Open::Existing,
    };
    let store = db::open_as(config, how).await?;
    let accounts = Accounts::new(store.clone(), Arc::new(SystemClock));
    let result = match cmd {
        OperatorsCommand::Add {
            email,
            name,
            role,
            merchant,
            password_stdin,
            base_url,
        } => {
            let new = NewOperator {
                email: &email,
                name: &name,
                role: &role,
                merchant,
            };
            let base = base_url.unwrap_or_else(|| default_base(config));
            add(&accounts, new, password_stdin, &base).await
        }
        OperatorsCommand::List { merchant } => list(&accounts, merchant).await,
        OperatorsCommand::Disable { email } => set_disabled(&accounts, &email, true).await,
        OperatorsCommand::Enable { email } => set_disabled(&accounts, &email, false).await,
        OperatorsCommand::ResetPassword { email, base_url } => {
            let base = base_url.unwrap_or_else(|| default_base(config));
            let op = accounts
                .by_email(&Email::parse(&email)?)
                .await
                .map_err(explain)?;
            print_link(&accounts, &op, &base).await
        }
    };
    store.close().await;
    result
}

/// `operators add`'s arguments.
struct NewOperator<'a> {
    email: &'a str,
    name: &'a str,
    role: &'a str,
    merchant: Option<i64>,
}

async fn add(
    accounts: &Accounts,
    new: NewOperator<'_>,
    password_stdin: bool,
    base: &str,
) -> anyhow::Result<()> {
    let role = OperatorRole::parse(new.role).context("unknown role")?;
    let merchant = new
        .merchant
        .map(|m| MerchantId::new(m).map_err(anyhow::Error::msg))
        .transpose()?;
    let email = Email::parse(new.email)?;
    let draft = OperatorDraft::new(email, new.name.to_owned(), role, merchant)?;
    let password = if password_stdin {
        Some(read_password()?)
    } else {
        None
    };
    let op = accounts
        .add(&draft, password.as_deref())
        .await
        .map_err(explain)?;
    eprintln!(
        "operator {} added: {} ({})",
        op.id,
        op.email,
        op.role.as_str()
    );
    if password.is_none() {
        print_link(accounts, &op, base).await?;
    }
    Ok(())
}

async fn list(accounts: &Accounts, merchant: Option<i64>) -> anyhow::Result<()> {
    let merchant = merchant
        .map(|m| MerchantId::new(m).map_err(anyhow::Error::msg))
        .transpose()?;
    let mut after = None;
    loop {
        let page = accounts.list(merchant, after, LIST_PAGE).await?;
        for op in &page {
            let of = op
                .merchant_id
                .map(|m| format!(" merchant={m}"))
                .unwrap_or_default();
            let state = match op.disabled_at {
                Some(t) => format!("disabled_at={t}"),
                None if op.has_password => "enabled".to_owned(),
                None => "enabled, no password yet".to_owned(),
            };
            println!(
                "{}\t{}\t{}{}\t{}\t{}",
                op.id,
                op.email,
                op.role.as_str(),
                of,
                state,
                op.name
            );
        }
        match page.last() {
            Some(last) if page.len() == LIST_PAGE as usize => after = Some(last.id.get()),
            _ => return Ok(()),
        }
    }
}

async fn set_disabled(accounts: &Accounts, email: &str, disabled: bool) -> anyhow::Result<()> {
    let op = accounts
        .by_email(&Email::parse(email)?)
        .await
        .map_err(explain)?;
    let op = accounts
        .set_disabled(op.id, disabled)
        .await
        .map_err(explain)?;
    match op.disabled_at {
        Some(t) => println!(
            "operator {} disabled at {t}; its console sessions ended",
            op.email
        ),
        None => println!("operator {} enabled", op.email),
    }
    Ok(())
}

/// Prints a link that sets `op`'s password, valid for an hour and once.
async fn print_link(accounts: &Accounts, op: &Operator, base: &str) -> anyhow::Result<()> {
    let token = accounts.start_reset(op.id).await.map_err(explain)?;
    eprintln!(
        "a link that sets the password of {} once, within {} minutes:",
        op.email,
        RESET_TTL.whole_minutes()
    );
    println!("{}/console/password/{token}", base.trim_end_matches('/'));
    Ok(())
}

/// The console's address by default: `server.listen` over plain HTTP.
fn default_base(config: &Config) -> String {
    format!("http://{}", config.server.listen)
}

/// The password: the first line of standard input, without its line end.
fn read_password() -> anyhow::Result<String> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .context("reading the password from standard input")?;
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}

/// An account error in an operator's words.
fn explain(e: AccountError) -> anyhow::Error {
    match e {
        AccountError::NotFound => anyhow::anyhow!("no operator with that email"),
        e => anyhow::Error::new(e),
    }
}
