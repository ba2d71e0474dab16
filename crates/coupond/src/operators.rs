//! `coupond operators`: operator accounts from the command line, for the first platform admin
//! of a new installation and for scripts (adding, listing, disabling a leaver). Everything
//! goes through the engine's [`Accounts`], as the API's and the console's doors will.

use std::io::BufRead;
use std::sync::Arc;

use anyhow::Context;
use coupond_domain::{Email, MerchantId, OperatorDraft, OperatorRole};
use coupond_engine::accounts::{AccountError, Accounts};
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
        } => add(&accounts, &email, &name, &role, merchant, password_stdin).await,
        OperatorsCommand::List { merchant } => list(&accounts, merchant).await,
        OperatorsCommand::Disable { email } => set_disabled(&accounts, &email, true).await,
        OperatorsCommand::Enable { email } => set_disabled(&accounts, &email, false).await,
    };
    store.close().await;
    result
}

async fn add(
    accounts: &Accounts,
    email: &str,
    name: &str,
    role: &str,
    merchant: Option<i64>,
    password_stdin: bool,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        password_stdin,
        "give the password on standard input with --password-stdin (at least 12 characters)"
    );
    let role = OperatorRole::parse(role).context("unknown role")?;
    let merchant = merchant
        .map(|m| MerchantId::new(m).map_err(anyhow::Error::msg))
        .transpose()?;
    let draft = OperatorDraft::new(Email::parse(email)?, name.to_owned(), role, merchant)?;
    let password = read_password()?;
    let op = accounts
        .add(&draft, Some(&password))
        .await
        .map_err(explain)?;
    println!(
        "operator {} added: {} ({})",
        op.id,
        op.email,
        op.role.as_str()
    );
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
