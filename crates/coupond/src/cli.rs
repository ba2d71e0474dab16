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
    /// Database URL: sqlite://path/to/file.db, postgres://user@host/db or mysql://user@host/db.
    #[arg(long = "database", global = true, value_name = "URL")]
    pub database_url: Option<String>,
}

impl Cli {
    /// The flags that override settings: the global ones, and `serve`'s own.
    pub fn overrides(&self) -> Overrides {
        let mut o = Overrides {
            database_url: self.global.database_url.clone(),
            ..Overrides::default()
        };
        if let Command::Serve(s) = &self.command {
            o.listen = s.listen.clone();
            o.log_level = s.log_level.clone();
            o.log_format = s.log_format;
        }
        o
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
    /// Manage operator accounts (the people who sign into the console).
    #[command(subcommand)]
    Operators(OperatorsCommand),
    /// Mint a user token (JWT) for testing and demos.
    Token(TokenArgs),
    /// Print the settings in effect (the defaults, the --config file, COUPOND_* variables and
    /// flags merged; secrets redacted), as a config file. Reads no database.
    Config(ConfigArgs),
    /// Print the OpenAPI document.
    Openapi,
    /// Copy the SQLite database, consistently, while it is in use (PostgreSQL and MySQL:
    /// use pg_dump or mysqldump; see docs/OPERATIONS.md).
    Backup(BackupArgs),
    /// Drive a running coupond with concurrent claims over HTTP, then audit the database.
    Loadtest(LoadtestArgs),
    /// Check the invariants (stock, per-user limits, locks and uses, the log, amounts) on the
    /// database; print every violation and exit non-zero if there is one.
    Audit(AuditArgs),
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
    /// One bulk issuance of --users (default 100,000) uploaded over HTTP and followed to its
    /// end, then audited: every user issued exactly one coupon.
    Issuance,
    /// --users (default 2,000) each claim, lock their coupon on an order, then confirm (even
    /// users) or cancel (odd users); then every order and coupon is checked and the
    /// database audited.
    Checkout,
    /// --users (default 5,000) quotes of a 50-line order for one user holding 200 coupons of
    /// 100 templates, over --concurrency (default 16) connections; every answer must be 200.
    Quote,
    /// --users (default 5,000) reads of the coupon centre (`GET /v1/users/{id}/claimable`, a
    /// page of 50) of a city with 1,000 templates on offer, over --concurrency (default 16)
    /// connections; every answer must be 200.
    Claimable,
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
    /// Claim this existing template instead of creating one.
    #[arg(long, value_name = "ID")]
    pub template: Option<i64>,
    /// Write every claim and its outcome (ok with the coupon, failed with the code, or
    /// unknown when no answer came) to FILE, one JSON object per line.
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// Send each claim with an Idempotency-Key and, while it gets no definitive answer (no
    /// answer, a 5xx, a 429 or a 409 `idempotency_in_flight`), send it again with the same key
    /// for up to this long (e.g. 60s): what a careful client does, so outages leave no outcome
    /// unknown.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub retry_for: Option<std::time::Duration>,
    /// Quote scenario: give every template a 5-test condition tree on the order (in-scope
    /// subtotal and units, weekday, channel, city) and a third of them (those of a category)
    /// two excluded products.
    #[arg(long)]
    pub conditions: bool,
    /// Checkout scenario: leave every third order locked, neither confirmed nor cancelled,
    /// and wait (up to --retry-for, else 60 s) for the server's sweeper to end those locks at
    /// their deadline. Run the server with a short `lock_ttl` (a few seconds).
    #[arg(long)]
    pub abandon: bool,
    /// Claimable scenario: while the requests run, pause and resume one of its templates
    /// (as the platform) this many times a second in all, as a merchant flipping its own
    /// template would; the answers (200, or 429 past `limits.pause_rate_per_template`) are
    /// counted.
    #[arg(long, value_name = "N")]
    pub flips_per_second: Option<u32>,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// How long past its deadline a lock may still be held (the sweeper's delay) before it
    /// counts as a violation.
    #[arg(long, default_value = "1m", value_parser = humantime::parse_duration)]
    pub grace: std::time::Duration,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on: host:port (a host name is resolved; port 0 picks a free one).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// tracing filter, e.g. info or coupond_api=debug,info.
    #[arg(long, value_name = "FILTER")]
    pub log_level: Option<String>,
    /// Log format.
    #[arg(long, value_enum)]
    pub log_format: Option<LogFormat>,
    /// Load a small demo data set and print ready-to-use API keys and a user token.
    #[arg(long)]
    pub demo: bool,
    /// Do not apply migrations: refuse to start unless the database's schema is this
    /// build's (for deployments that migrate in a separate step with `coupond migrate`).
    #[arg(long)]
    pub no_migrate: bool,
}

#[derive(Debug, Args)]
pub struct BackupArgs {
    /// The file to write; it must not exist.
    #[arg(long, value_name = "FILE")]
    pub to: PathBuf,
}

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Print the documented defaults, with their comments, instead.
    #[arg(long)]
    pub defaults: bool,
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
    /// Revoke a key by id: running servers refuse it within `auth.cache_ttl` (1 s unless
    /// set; the API's revoke tells every instance at once).
    Revoke {
        /// The key id shown by `keys create` and `keys list`.
        id: i64,
    },
}

/// What `coupond operators` does.
#[derive(Debug, Subcommand)]
pub enum OperatorsCommand {
    /// Add an operator (a person who signs into the console), with a password read from
    /// standard input, or without one: then a link that sets it is printed.
    Add {
        #[arg(long)]
        email: String,
        /// The name shown in the console and the audit trail.
        #[arg(long)]
        name: String,
        /// Platform: admin, marketing, support, finance. Merchant staff: owner, staff.
        #[arg(long, value_parser = ["admin", "marketing", "support", "finance", "owner", "staff"])]
        role: String,
        /// The merchant of an owner or staff account.
        #[arg(long, value_name = "ID")]
        merchant: Option<i64>,
        /// Read the password (at least 12 characters, not a common one) from the first line
        /// of standard input.
        #[arg(long)]
        password_stdin: bool,
        /// Where operators reach the console, for the set-password link (default: http://
        /// and `server.listen`).
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
    },
    /// List operators (never their passwords).
    List {
        /// Only this merchant's staff.
        #[arg(long, value_name = "ID")]
        merchant: Option<i64>,
    },
    /// Disable an operator: their console sessions end at once.
    Disable { email: String },
    /// Enable a disabled operator again.
    Enable { email: String },
    /// Print a one-time link that sets the operator's password, valid 1 hour.
    ResetPassword {
        email: String,
        /// Where operators reach the console (default: http:// and `server.listen`).
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
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

/// Who the audit trail says made a change from the command line: `cli:<user>`, the
/// operating-system user that ran it (`$USER`, else `$LOGNAME`, else `unknown`).
pub fn audit_context() -> coupond_store::audit::Context {
    let user = ["USER", "LOGNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| "unknown".to_owned());
    coupond_store::audit::Context {
        who: coupond_store::audit::Who::Cli(user.chars().take(100).collect()),
        request_id: None,
        client: None,
    }
}
