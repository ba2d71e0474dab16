//! The command line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::config::{LogFormat, Overrides};

/// coupond: coupon and promotion engine for marketplaces.
#[derive(Debug, Parser)]
#[command(name = "coupond", version, about)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Settings every subcommand accepts (flags beat `COUPOND_*` variables, which beat the file).
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// TOML configuration file (see `coupond config`).
    #[arg(long, global = true, env = "COUPOND_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Database URL: sqlite://path/to/file.db or postgres://user@host/db.
    #[arg(long = "database", global = true, value_name = "URL")]
    pub database_url: Option<String>,
    /// Address to listen on (serve).
    #[arg(long, global = true, value_name = "ADDR")]
    pub listen: Option<String>,
    /// tracing filter, e.g. info or coupond_api=debug,info.
    #[arg(long, global = true, value_name = "FILTER")]
    pub log_level: Option<String>,
    /// Log format.
    #[arg(long, global = true, value_enum)]
    pub log_format: Option<LogFormat>,
}

impl GlobalArgs {
    pub fn overrides(&self) -> Overrides {
        Overrides {
            listen: self.listen.clone(),
            database_url: self.database_url.clone(),
            log_level: self.log_level.clone(),
            log_format: self.log_format,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP service (migrations are applied first).
    Serve(ServeArgs),
    /// Apply database migrations and exit.
    Migrate,
    /// Manage API keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Mint a user token (JWT) for testing and demos.
    Token(TokenArgs),
    /// Print the documented default configuration (a valid config file).
    Config,
    /// Print the OpenAPI document.
    Openapi,
    /// Drive a running coupond with concurrent claims over HTTP, then audit the database.
    Loadtest(LoadtestArgs),
}

/// What `loadtest` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    /// One template, stock 100,000, 200,000 distinct users, 512 connections.
    FlashSale,
    /// GET /healthz (a route that does no work): the HTTP ceiling of the same server.
    Ceiling,
    /// Your own numbers (defaults: 10,000 users, stock 5,000, 64 connections).
    Custom,
}

#[derive(Debug, Args)]
pub struct LoadtestArgs {
    /// The server to drive; it must use the same database as this command (setup and audit go
    /// to the database directly).
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    pub url: String,
    #[arg(long, value_enum, default_value = "flash-sale")]
    pub scenario: Scenario,
    /// Number of claims (one per user, unless --repeat-users).
    #[arg(long)]
    pub users: Option<usize>,
    /// Stock of the template the test creates.
    #[arg(long)]
    pub stock: Option<i64>,
    /// Concurrent connections.
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Per-user limit of the template.
    #[arg(long, default_value_t = 1)]
    pub per_user_limit: u32,
    /// Claim as 10 users over and over (exercises the per-user limit; expect rate limits).
    #[arg(long)]
    pub repeat_users: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Load a small demo data set and print ready-to-use API keys and a user token.
    #[arg(long)]
    pub demo: bool,
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key and print it once (only its hash is stored).
    Create {
        /// platform, merchant or service.
        #[arg(long, value_parser = ["platform", "merchant", "service"])]
        role: String,
        /// The merchant a merchant key acts for (required with --role merchant).
        #[arg(long, value_name = "ID")]
        merchant: Option<i64>,
        /// A note to tell keys apart.
        #[arg(long, default_value = "")]
        label: String,
    },
    /// List keys (never the secrets).
    List,
    /// Revoke a key by id; it stops working at once.
    Revoke {
        /// The key id shown by `keys create` and `keys list`.
        id: i64,
    },
}

#[derive(Debug, Args)]
pub struct TokenArgs {
    /// The user id (the token's `sub`).
    #[arg(long)]
    pub user: String,
    /// How long the token is valid (e.g. 30m, 1h, 7d).
    #[arg(long, default_value = "1h", value_parser = humantime::parse_duration)]
    pub ttl: std::time::Duration,
}
