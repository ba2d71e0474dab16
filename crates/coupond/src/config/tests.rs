//! Loading, layering and printing the configuration.

use super::*;
use figment::Jail;

#[test]
fn documented_defaults_are_the_defaults() {
    Jail::expect_with(|_| {
        let c = Config::load(None, &Overrides::default()).expect("defaults load");
        assert_eq!(c.server.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(c.database.url, "sqlite://./data/coupond.db");
        assert!(c.auth.jwt_secret.is_none());
        assert_eq!(c.catalog.freeze_period, Duration::from_secs(300));
        assert_eq!(c.server.max_body_bytes, 65536);
        assert_eq!(c.log.format, LogFormat::Text);
        assert_eq!(c.catalog.max_bindings_per_listing, 3);
        assert_eq!(
            (c.claim.mode, c.claim.max_batch),
            (ClaimModeName::Batched, 512)
        );
        assert_eq!(c.server.max_connections, 10_000);
        assert_eq!(
            (
                c.server.header_timeout,
                c.server.stall_timeout,
                c.server.request_timeout
            ),
            (
                Duration::from_secs(15),
                Duration::from_secs(30),
                Duration::from_secs(60)
            )
        );
        assert_eq!(c.auth.max_token_lifetime, Duration::from_secs(30 * 86_400));
        assert!(c.webhook.allow_hosts.is_empty());
        assert_eq!(c.background.txn_target, Duration::from_millis(10));
        Ok(())
    });
}

#[test]
fn the_webhook_allow_list_reads_from_a_file_or_the_environment() {
    Jail::expect_with(|jail| {
        jail.create_file(
            "c.toml",
            "webhook_allow_hosts = [\"hooks.internal\", \"10.1.0.0/16\"]\n",
        )?;
        let c = Config::load(Some(Path::new("c.toml")), &Overrides::default()).expect("loads");
        assert_eq!(c.webhook.allow_hosts, ["hooks.internal", "10.1.0.0/16"]);
        jail.set_env("COUPOND_WEBHOOK_ALLOW_HOSTS", "127.0.0.0/8, ::1");
        let c = Config::load(Some(Path::new("c.toml")), &Overrides::default()).expect("loads");
        assert_eq!(c.webhook.allow_hosts, ["127.0.0.0/8", "::1"]);
        Ok(())
    });
}

/// Every list-valued variable takes a comma-separated string (issue 61 point 15).
#[test]
fn list_settings_read_comma_separated_from_the_environment() {
    Jail::expect_with(|jail| {
        jail.set_env("COUPOND_SMS_KINDS", "coupon_issued, campaign");
        jail.set_env("COUPOND_EMAIL_KINDS", "coupon_expiring");
        jail.set_env("COUPOND_TRUSTED_PROXIES", "10.0.0.0/8,192.168.1.1");
        let c = Config::load(None, &Overrides::default()).expect("loads");
        let kinds: Vec<&str> = c.sms.kinds.iter().map(|k| k.as_str()).collect();
        assert_eq!(kinds, ["coupon_issued", "campaign"]);
        let kinds: Vec<&str> = c.email.kinds.iter().map(|k| k.as_str()).collect();
        assert_eq!(kinds, ["coupon_expiring"]);
        assert_eq!(c.server.trusted_proxies, ["10.0.0.0/8", "192.168.1.1"]);
        jail.set_env("COUPOND_SMS_KINDS", "[campaign]");
        let c = Config::load(None, &Overrides::default()).expect("loads");
        assert_eq!(c.sms.kinds.len(), 1);
        jail.set_env("COUPOND_SMS_KINDS", "coupon_issued,nonsense");
        let err = Config::load(None, &Overrides::default()).unwrap_err();
        assert!(format!("{err:#}").contains("nonsense"), "{err:#}");
        Ok(())
    });
}

#[test]
fn layers_apply_in_order() {
    Jail::expect_with(|jail| {
        jail.create_file(
            "c.toml",
            "listen = \"127.0.0.1:1000\"\nlog_level = \"warn\"\nfreeze_period = \"1m\"\n",
        )?;
        jail.set_env("COUPOND_LOG_LEVEL", "debug");
        jail.set_env("COUPOND_MAX_BODY_BYTES", "1024");
        // Unrelated COUPOND_* variables (the test suite's) are not settings.
        jail.set_env("COUPOND_TEST_POSTGRES_URL", "postgres://x");
        jail.set_env("COUPOND_TEST_MYSQL_URL", "mysql://x");
        let flags = Overrides {
            listen: Some("127.0.0.1:2000".into()),
            ..Default::default()
        };
        let c = Config::load(Some(Path::new("c.toml")), &flags).expect("loads");
        assert_eq!(c.server.listen.to_string(), "127.0.0.1:2000"); // flag beats file
        assert_eq!(c.log.level, "debug"); // env beats file
        assert_eq!(c.server.max_body_bytes, 1024);
        assert_eq!(c.catalog.freeze_period, Duration::from_secs(60)); // file beats default
        Ok(())
    });
}

#[test]
fn bad_values_are_errors_naming_the_setting() {
    Jail::expect_with(|jail| {
        jail.set_env("COUPOND_LISTEN", "not-an-address");
        let err = Config::load(None, &Overrides::default()).expect_err("rejected");
        assert!(err.to_string().to_lowercase().contains("listen"), "{err}");
        jail.set_env("COUPOND_LISTEN", "127.0.0.1:1");
        jail.set_env("COUPOND_STALL_TIMEOUT", "0s");
        let err = Config::load(None, &Overrides::default()).expect_err("zero refused");
        assert!(err.to_string().contains("stall_timeout"), "{err}");
        jail.set_env("COUPOND_STALL_TIMEOUT", "30s");
        jail.set_env("COUPOND_DATABASE_POOL_SIZE", "0");
        let err = Config::load(None, &Overrides::default()).expect_err("no pool refused");
        assert!(
            err.to_string()
                .contains("database.pool_size (database_pool_size)"),
            "{err}"
        );
        // A value of the wrong type is said in words, not in Rust's types.
        jail.set_env("COUPOND_DATABASE_POOL_SIZE", "abc");
        let err = Config::load(None, &Overrides::default()).expect_err("text refused");
        let text = err.to_string();
        assert!(text.contains("COUPOND_DATABASE_POOL_SIZE"), "{text}");
        assert!(text.contains("expected a whole number"), "{text}");
        assert!(
            !text.contains("u32") && !text.contains("invalid type"),
            "{text}"
        );
        jail.set_env("COUPOND_DATABASE_POOL_SIZE", "48");
        let c = Config::load(None, &Overrides::default()).expect("a pool size loads");
        assert_eq!(c.database.pool_size, Some(48));
        jail.create_file("bad.toml", "no_such_setting = 1\n")?;
        let err = Config::load(Some(Path::new("bad.toml")), &Overrides::default())
            .expect_err("unknown key rejected");
        assert!(err.to_string().contains("no_such_setting"), "{err}");
        let err = Config::load(Some(Path::new("missing.toml")), &Overrides::default())
            .expect_err("missing file rejected");
        assert!(err.to_string().contains("missing.toml"), "{err}");
        Ok(())
    });
}

#[test]
fn secrets_never_print() {
    Jail::expect_with(|jail| {
        jail.set_env("COUPOND_JWT_SECRET", "hunter2-hunter2-hunter2");
        jail.set_env("COUPOND_DATABASE_URL", "postgres://app:pw123@db/coupond");
        jail.set_env("COUPOND_REDIS_URL", "redis://app:rpw456@cache:6379/");
        jail.set_env("COUPOND_NATS_URL", "nats://app:npw789@bus:4222");
        let c = Config::load(None, &Overrides::default()).expect("loads");
        let dbg = format!("{c:?}");
        for secret in ["hunter2", "pw123", "rpw456", "npw789"] {
            assert!(!dbg.contains(secret), "{dbg}");
        }
        let shown = Config::effective_toml(None, &Overrides::default()).expect("prints");
        for secret in ["hunter2", "pw123", "rpw456", "npw789"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(
            shown.contains("redis://app:<redacted>@cache:6379/"),
            "{shown}"
        );
        assert_eq!(
            redact_url("nats://s3cr3tt0ken@bus:4222"),
            "nats://<redacted>@bus:4222"
        );
        let q = redact_url("postgres://app@db/coupond?sslmode=require&password=s3cret");
        assert_eq!(
            q,
            "postgres://app@db/coupond?sslmode=require&password=<redacted>"
        );
        assert_eq!(
            redact_url("mysql://app:pw123@db:3306/coupond"),
            "mysql://app:<redacted>@db:3306/coupond"
        );
        assert_eq!(
            redact_url("sqlite://./data/coupond.db"),
            "sqlite://./data/coupond.db"
        );
        Ok(())
    });
}

#[test]
fn files_may_use_sections_or_the_flat_names() {
    Jail::expect_with(|jail| {
        jail.create_file(
            "nested.toml",
            "[database]\nurl = \"postgres://db/x\"\npool_size = 32\n\n[webhook]\ntimeout = \"3s\"\n",
        )?;
        let c = Config::load(Some(Path::new("nested.toml")), &Overrides::default()).expect("loads");
        assert_eq!(
            (c.database.url.as_str(), c.database.pool_size),
            ("postgres://db/x", Some(32))
        );
        assert_eq!(c.webhook.timeout, Duration::from_secs(3));
        jail.create_file(
            "flat.toml",
            "database_url = \"postgres://db/y\"\nmax_webhooks_per_owner = 4\nclaim_mode = \"single\"\n",
        )?;
        let c = Config::load(Some(Path::new("flat.toml")), &Overrides::default()).expect("loads");
        assert_eq!(c.database.url, "postgres://db/y");
        assert_eq!(c.webhook.max_per_owner, 4);
        assert_eq!(c.claim.mode, ClaimModeName::Single);
        // The environment's flat names reach their sections too, and beat the file.
        jail.set_env("COUPOND_DATABASE_POOL_SIZE", "7");
        jail.set_env("COUPOND_WEBHOOK_TIMEOUT", "9s");
        let c = Config::load(Some(Path::new("nested.toml")), &Overrides::default()).expect("loads");
        assert_eq!(c.database.pool_size, Some(7));
        assert_eq!(c.webhook.timeout, Duration::from_secs(9));
        // A key a section does not have is refused by name.
        jail.create_file("typo.toml", "[database]\nulr = \"x\"\n")?;
        let err = Config::load(Some(Path::new("typo.toml")), &Overrides::default())
            .expect_err("unknown key refused");
        assert!(err.to_string().contains("ulr"), "{err}");
        Ok(())
    });
}

#[test]
fn every_flat_name_has_a_documented_setting() {
    let defaults = figment::Figment::from(figment::providers::Toml::string(DEFAULTS_TOML));
    for (flat, section, key) in super::flat::FLAT {
        let documented = defaults.find_value(&format!("{section}.{key}")).is_ok()
            || DEFAULTS_TOML.contains(&format!("# {key} = "));
        assert!(
            documented,
            "{flat}: {section}.{key} is not in defaults.toml"
        );
    }
}

#[test]
fn errors_name_the_variable_or_flag_and_no_source_paths() {
    Jail::expect_with(|jail| {
        jail.set_env("COUPOND_LOCK_TTL", "abc");
        let err = Config::load(None, &Overrides::default())
            .expect_err("rejected")
            .to_string();
        assert!(
            err.contains("COUPOND_LOCK_TTL") && err.contains("checkout.lock_ttl"),
            "{err}"
        );
        assert!(!err.contains(".rs"), "{err}");
        jail.set_env("COUPOND_LOCK_TTL", "15m");
        jail.create_file("c.toml", "[server]\nmax_connections = \"many\"\n")?;
        let err = Config::load(Some(std::path::Path::new("c.toml")), &Overrides::default())
            .expect_err("rejected")
            .to_string();
        assert!(
            err.contains("server.max_connections") && err.contains("c.toml"),
            "{err}"
        );
        assert!(!err.contains(".rs"), "{err}");
        Ok(())
    });
}

/// `coupond config` refuses a secret `serve` would refuse, naming the setting both ways.
#[test]
fn short_secrets_are_refused_by_every_command() {
    Jail::expect_with(|jail| {
        jail.set_env("COUPOND_JWT_SECRET", "short");
        let e = Config::load(None, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("auth.jwt_secret (jwt_secret) must be at least 16"),
            "{e}"
        );
        jail.set_env("COUPOND_JWT_SECRET", "long enough for a token key");
        jail.set_env("COUPOND_CONSOLE_SECRET", "not 32 characters");
        let e = Config::load(None, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("console.secret (console_secret) must be at least 32"),
            "{e}"
        );
        Ok(())
    });
}

/// The audit's time of day and the lock deadlines' bound are checked by every command.
#[test]
fn audit_times_and_lock_bounds_are_checked() {
    Jail::expect_with(|jail| {
        let config = Config::load(None, &Overrides::default()).unwrap();
        assert_eq!(
            config
                .background
                .audit_schedule()
                .unwrap()
                .map(|t| t.to_string()),
            Some("04:00".to_owned())
        );
        jail.set_env("COUPOND_AUDIT_AT", "off");
        let config = Config::load(None, &Overrides::default()).unwrap();
        assert_eq!(config.background.audit_schedule(), Ok(None));
        jail.set_env("COUPOND_AUDIT_AT", "25:00");
        let e = Config::load(None, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("background.audit_at (audit_at)"), "{e}");
        jail.set_env("COUPOND_AUDIT_AT", "04:00");
        jail.set_env("COUPOND_MAX_LOCK_TTL", "5m");
        let e = Config::load(None, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("checkout.max_lock_ttl (max_lock_ttl) must be at least"),
            "{e}"
        );
        Ok(())
    });
}

#[test]
fn email_and_sms_secrets_never_print_and_bad_values_are_named() {
    Jail::expect_with(|jail| {
        jail.set_env(
            "COUPOND_EMAIL_SMTP_URL",
            "smtp://mailer:mpw321@relay:587?tls=starttls",
        );
        jail.set_env("COUPOND_SMS_PROVIDER", "twilio");
        jail.set_env("COUPOND_SMS_ACCOUNT_SID", "AC123");
        jail.set_env("COUPOND_SMS_AUTH_TOKEN", "twtok654");
        jail.set_env("COUPOND_SMS_FROM", "+15005550006");
        jail.set_env("COUPOND_SMS_QUIET_HOURS", "22:30-07:00");
        let c = Config::load(None, &Overrides::default()).expect("loads");
        assert_eq!(c.sms.provider, Some(SmsProvider::Twilio));
        assert_eq!(c.sms.quiet_hours, "22:30-07:00");
        assert_eq!(c.sms.from.as_deref(), Some("+15005550006"));
        assert_eq!(c.messages.default_locale, "en");
        let dbg = format!("{c:?}");
        let shown = Config::effective_toml(None, &Overrides::default()).expect("prints");
        for secret in ["mpw321", "twtok654"] {
            assert!(!dbg.contains(secret), "{dbg}");
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(
            shown.contains("smtp://mailer:<redacted>@relay:587"),
            "{shown}"
        );
        for (var, value, named) in [
            ("COUPOND_SMS_QUIET_HOURS", "late", "sms.quiet_hours"),
            ("COUPOND_EMAIL_FROM", "not an address", "email.from"),
            (
                "COUPOND_MESSAGES_DEFAULT_LOCALE",
                "<b>",
                "messages.default_locale",
            ),
            ("COUPOND_EMAIL_PER_SECOND", "0", "email.per_second"),
            ("COUPOND_SMS_AUTH_TOKEN", "", "sms.auth_token"),
        ] {
            let old = std::env::var(var).ok();
            if value.is_empty() {
                std::env::remove_var(var);
            } else {
                jail.set_env(var, value);
            }
            let e = Config::load(None, &Overrides::default()).expect_err(var);
            assert!(e.to_string().contains(named), "{var}: {e}");
            match old {
                Some(v) => jail.set_env(var, v),
                None => std::env::remove_var(var),
            }
        }
        Ok(())
    });
}

/// The platform's time zone is an IANA name, UTC by default, checked when read; the seen
/// settings are bounded.
#[test]
fn the_time_zone_is_checked_and_shown() {
    Jail::expect_with(|jail| {
        let c = Config::load(None, &Overrides::default()).unwrap();
        assert_eq!(c.platform.time_zone, coupond_domain::Zone::UTC);
        assert_eq!(c.users.seen_resolution, Duration::from_secs(300));
        assert_eq!(c.users.seen_capacity, 100_000);
        jail.set_env("COUPOND_PLATFORM_TIME_ZONE", "Asia/Shanghai");
        let c = Config::load(None, &Overrides::default()).unwrap();
        assert_eq!(c.platform.time_zone.name(), "Asia/Shanghai");
        let shown = Config::effective_toml(None, &Overrides::default()).unwrap();
        assert!(
            shown.contains("[platform]") && shown.contains("time_zone = \"Asia/Shanghai\""),
            "{shown}"
        );
        jail.set_env("COUPOND_PLATFORM_TIME_ZONE", "Mars/Olympus_Mons");
        let e = Config::load(None, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("platform.time_zone")
                && e.contains("COUPOND_PLATFORM_TIME_ZONE")
                && e.contains("IANA"),
            "{e}"
        );
        jail.set_env("COUPOND_PLATFORM_TIME_ZONE", "Europe/Berlin");
        jail.create_file("c.toml", "[platform]\ntime_zone = \"Nowhere\"\n")?;
        // The environment wins over the file, so the file's bad name is not read.
        assert!(Config::load(Some(Path::new("c.toml")), &Overrides::default()).is_ok());
        jail.set_env("COUPOND_USERS_SEEN_CAPACITY", "10");
        let e = Config::load(None, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("users.seen_capacity (users_seen_capacity)"),
            "{e}"
        );
        jail.set_env("COUPOND_USERS_SEEN_CAPACITY", "5000");
        jail.set_env("COUPOND_USERS_SEEN_RESOLUTION", "0s");
        let e = Config::load(None, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("users.seen_resolution"), "{e}");
        Ok(())
    });
}
