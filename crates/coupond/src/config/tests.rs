//! Loading, layering and printing the configuration.

use super::*;
use figment::Jail;

#[test]
fn documented_defaults_are_the_defaults() {
    Jail::expect_with(|_| {
        let c = Config::load(None, &Overrides::default()).expect("defaults load");
        assert_eq!(c.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(c.database_url, "sqlite://./data/coupond.db");
        assert!(c.jwt_secret.is_none());
        assert_eq!(c.freeze_period, Duration::from_secs(300));
        assert_eq!(c.max_body_bytes, 65536);
        assert_eq!(c.log_format, LogFormat::Text);
        assert_eq!(c.max_bindings_per_listing, 3);
        assert_eq!(
            (c.claim_mode, c.claim_max_batch),
            (ClaimModeName::Batched, 512)
        );
        assert_eq!(c.max_connections, 10_000);
        assert_eq!(
            (c.header_timeout, c.stall_timeout, c.request_timeout),
            (
                Duration::from_secs(15),
                Duration::from_secs(30),
                Duration::from_secs(60)
            )
        );
        assert_eq!(c.max_token_lifetime, Duration::from_secs(30 * 86_400));
        assert!(c.webhook_allow_hosts.is_empty());
        assert_eq!(c.background_txn_target, Duration::from_millis(10));
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
        assert_eq!(c.webhook_allow_hosts, ["hooks.internal", "10.1.0.0/16"]);
        jail.set_env("COUPOND_WEBHOOK_ALLOW_HOSTS", "127.0.0.0/8, ::1");
        let c = Config::load(Some(Path::new("c.toml")), &Overrides::default()).expect("loads");
        assert_eq!(c.webhook_allow_hosts, ["127.0.0.0/8", "::1"]);
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
        let flags = Overrides {
            listen: Some("127.0.0.1:2000".into()),
            ..Default::default()
        };
        let c = Config::load(Some(Path::new("c.toml")), &flags).expect("loads");
        assert_eq!(c.listen.to_string(), "127.0.0.1:2000"); // flag beats file
        assert_eq!(c.log_level, "debug"); // env beats file
        assert_eq!(c.max_body_bytes, 1024);
        assert_eq!(c.freeze_period, Duration::from_secs(60)); // file beats default
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
        assert!(err.to_string().contains("database_pool_size"), "{err}");
        jail.set_env("COUPOND_DATABASE_POOL_SIZE", "48");
        let c = Config::load(None, &Overrides::default()).expect("a pool size loads");
        assert_eq!(c.database_pool_size, Some(48));
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
        jail.set_env("COUPOND_JWT_SECRET", "hunter2");
        jail.set_env("COUPOND_DATABASE_URL", "postgres://app:pw123@db/coupond");
        let c = Config::load(None, &Overrides::default()).expect("loads");
        let dbg = format!("{c:?}");
        assert!(!dbg.contains("hunter2") && !dbg.contains("pw123"), "{dbg}");
        let q = redact_url("postgres://app@db/coupond?sslmode=require&password=s3cret");
        assert_eq!(
            q,
            "postgres://app@db/coupond?sslmode=require&password=<redacted>"
        );
        assert_eq!(
            redact_url("sqlite://./data/coupond.db"),
            "sqlite://./data/coupond.db"
        );
        Ok(())
    });
}
