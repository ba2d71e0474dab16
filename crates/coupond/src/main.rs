//! The coupond binary.
//!
//! - `cli`: the command line (clap).
//! - `config`: layered configuration (defaults, file, environment, flags).
//! - `db`: opens the store the database URL names.
//! - `serve`: runs the HTTP service with graceful shutdown.
//! - `app_settings`: the API's settings, built from the configuration.
//! - `brokers`: what `serve` shares with other instances outside the database (Redis limits
//!   and cache notices, NATS JetStream events).
//! - `demo`: the `serve --demo` data set.
//! - `admin`: `keys`, `token`, `migrate`, `config`, `openapi`, `audit`.
//! - `operators`: operator accounts (`operators add`, `list`, `disable`, `enable`,
//!   `reset-password`).
//! - `loadtest`: concurrent claims over HTTP, then an audit of the database.
#![forbid(unsafe_code)]

mod admin;
mod app_settings;
mod brokers;
mod cli;
mod config;
mod db;
mod demo;
mod loadtest;
mod messaging;
mod operators;
mod serve;

use clap::Parser;
use coupond_store::audit::acting;

/// The hot path allocates small short-lived objects on every request (futures, headers, JSON);
/// glibc's allocator spent a fifth of the server's time on them in the flash-sale profile.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use crate::cli::{Cli, Command};
use crate::config::Config;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) if e.is::<Logged>() => std::process::ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {}", said(&e));
            std::process::ExitCode::FAILURE
        }
    }
}

/// An error already logged (in the log's format) where it happened: `main` prints nothing more.
#[derive(Debug)]
pub(crate) struct Logged;

impl std::fmt::Display for Logged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the error is in the log")
    }
}

impl std::error::Error for Logged {}

/// `e` with its causes, each said once: a cause whose words its parent already repeats
/// (a driver's message inside the store's) is left out.
pub(crate) fn said(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let words = cause.to_string();
        if out.contains(&words) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&words);
    }
    out
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let overrides = cli.overrides();
    let config = Config::load(cli.global.config.as_deref(), &overrides)?;
    for name in Config::unknown_variables() {
        eprintln!(
            "warning: {name} is not a coupond setting and is ignored (`coupond config \
             --defaults` lists them; the variable is COUPOND_ and the setting's flat name)"
        );
    }
    match cli.command {
        Command::Serve(args) => serve::run(config, args).await,
        Command::Migrate => admin::migrate(&config).await,
        // Changes made from the command line are the audit trail's `cli:<user>`.
        Command::Keys(cmd) => acting(cli::audit_context(), admin::keys(&config, cmd)).await,
        Command::Operators(cmd) => acting(cli::audit_context(), operators::run(&config, cmd)).await,
        Command::Token(args) => admin::token(&config, args).await,
        Command::Config(args) => {
            if args.defaults {
                admin::emit(config::DEFAULTS_TOML)?;
            } else {
                let file = cli.global.config.as_deref();
                admin::emit(&Config::effective_toml(file, &overrides)?)?;
            }
            Ok(())
        }
        Command::Openapi => admin::openapi(),
        Command::Backup(args) => db::backup(&config, &args.to).await,
        Command::Loadtest(args) => loadtest::run(&config, args).await,
        Command::Audit(args) => admin::audit(&config, args).await,
    }
}
