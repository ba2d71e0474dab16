//! `coupond serve`: logging, the store, the router, and graceful shutdown.

use std::sync::Arc;

use anyhow::Context;
use coupond_api::server::ConnectionLimits;
use coupond_api::AppState;
use coupond_engine::{Clock, SystemClock, TargetPolicy};
use tracing_subscriber::EnvFilter;

use crate::cli::ServeArgs;
use crate::config::{redact_url, Config, LogFormat};
use crate::{db, demo};

fn init_logging(config: &Config) -> anyhow::Result<()> {
    // async-nats tells of each reconnection attempt at INFO; coupond says what matters about
    // NATS itself (a warning when it goes away), unless the filter names async_nats.
    let level = if config.log.level.contains("async_nats") {
        config.log.level.clone()
    } else {
        format!("{},async_nats=warn", config.log.level)
    };
    let filter = EnvFilter::try_new(&level)
        .with_context(|| format!("log_level {:?} is not a valid filter", config.log.level))?;
    // Logs go to stderr so that stdout carries only what the user asked for (demo keys).
    // Colour codes only for a person at a terminal, not in files, journald or pipes.
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let result = match config.log.format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
    result.map_err(|e| anyhow::anyhow!("initialising logging: {e}"))
}

/// `coupond serve`. Once logging is set up, a failure is logged as an error in the configured
/// format (a JSON line with `--log-format json`), and [`crate::Logged`] tells `main` it was.
pub async fn run(config: Config, args: ServeArgs) -> anyhow::Result<()> {
    init_logging(&config)?;
    match serve(config, args).await {
        Ok(()) => Ok(()),
        Err(e) => {
            tracing::error!(error = %crate::said(&e), "coupond could not go on");
            Err(crate::Logged.into())
        }
    }
}

async fn serve(config: Config, args: ServeArgs) -> anyhow::Result<()> {
    tracing::info!(config = ?config, "starting coupond");
    // The metrics recorder first: what the workers register as they start (their restarts
    // counters at zero) is then on the first scrape.
    coupond_api::observe::metrics_handle();
    // Fault injection for the failpoint tests; not configuration (test builds only).
    if let Ok(spec) = std::env::var("COUPOND_FAILPOINTS") {
        coupond_store::failpoints::configure(&spec)
            .map_err(anyhow::Error::msg)
            .context("COUPOND_FAILPOINTS")?;
        tracing::warn!(failpoints = %spec, "fault injection is on");
    }
    // Bound first: an address in use fails before anything is created on disk. Connections
    // wait in the listen queue while the database opens.
    let listen = &config.server.listen;
    let at = tokio::net::lookup_host(listen.as_str())
        .await
        .with_context(|| format!("listen: resolving {listen}"))?
        .next()
        .with_context(|| format!("listen: {listen} resolves to no address"))?;
    let listener =
        coupond_api::server::bind(at).with_context(|| format!("binding {listen} ({at})"))?;
    let addr = listener.local_addr()?;
    let how = if args.no_migrate {
        db::Open::Existing
    } else {
        db::Open::Migrate
    };
    let (store, found) = db::open_with_schema(&config, how).await?;
    let database = redact_url(&config.database.url);
    tracing::info!(%database, "{}", db::migrated(found, how));
    let secret = db::jwt_secret(store.as_ref(), config.auth.jwt_secret.as_ref()).await?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let targets = Arc::new(
        TargetPolicy::new(&config.webhook.allow_hosts)
            .map_err(anyhow::Error::msg)
            .context("webhook_allow_hosts")?,
    );
    let mut settings = crate::app_settings::api_settings(&config, targets.clone())?;
    // Names this process in leases and in its notices to the other instances.
    let instance = format!("coupond-{:016x}", rand::random::<u64>());
    let shared = crate::brokers::redis(&config, &instance, &secret, &mut settings)?;
    let nats = crate::brokers::nats(&config).await?;
    settings.publishes_to_nats = nats.is_some();
    let messaging = crate::messaging::build(&config, &store, &clock, &secret, &instance)?;
    // Merchants' invitations go by its email channel.
    settings.messaging = messaging.rules.clone();
    let state = AppState::new(
        coupond_app::App::new(store.clone(), clock.clone(), &secret, settings),
        &secret,
    );
    let console = console(&config, &store, &state, args.demo).await?;

    if args.demo {
        print_demo(&store, &state, clock.now(), addr).await?;
    }
    tracing::info!(%addr, database = %redact_url(&config.database.url), backend = store.backend(), "listening");
    if config.log.format == LogFormat::Text {
        // For a person; with JSON logs stderr carries only JSON lines (the one above says it).
        eprintln!(
            "coupond listening on http://{addr} ({} database)",
            store.backend()
        );
    }

    // Aborted when `run` returns; it holds no state worth finishing.
    let upkeep = spawn_upkeep(state.clone());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    // Background work stops between steps once the signal arrives; what it committed stays.
    let mut background = start_workers(&config, &state, &store, &clock, &instance, &stop_rx, nats);
    background.extend(start_messaging(
        messaging, &state, &store, &clock, &instance, &stop_rx,
    ));
    background.extend(shared.start(&state, &stop_rx));
    let grace = config.server.shutdown_grace;
    let engine = state.claims().clone();
    let seen = state.seen().clone();
    let limits = ConnectionLimits {
        max_connections: config.server.max_connections,
        max_connections_per_ip: config.server.max_connections_per_ip,
        header_timeout: config.server.header_timeout,
        stall_timeout: config.server.stall_timeout,
    };
    let server = coupond_api::server::serve(
        listener,
        coupond_api::router_with(state, console),
        limits,
        async move {
            shutdown_signal().await;
            tracing::info!("shutdown signal received; finishing in-flight requests");
            let _ = stop_tx.send(true);
        },
    );
    let mut stop_rx = stop_rx;
    let deadline = async move {
        // Wait for the signal, then give in-flight requests `grace` to finish.
        let _ = stop_rx.wait_for(|stopped| *stopped).await;
        tokio::time::sleep(grace).await;
    };
    tokio::select! {
        () = server => {},
        () = deadline => tracing::warn!(?grace, "in-flight requests did not finish within the grace period"),
    }
    finish(upkeep, background, engine, seen, store, &instance).await;
    tracing::info!("stopped");
    Ok(())
}

/// The console's routes, its secret configured or kept in the database. The demo lets its
/// printed keys sign in too (`console.key_sign_in` is off by default).
async fn console(
    config: &Config,
    store: &Arc<dyn coupond_store::Store>,
    state: &AppState,
    demo: bool,
) -> anyhow::Result<axum::Router> {
    let secret = db::console_secret(store.as_ref(), config.console.secret.as_ref()).await?;
    let settings = coupond_console::ConsoleSettings {
        secret: Some(secret),
        secure_cookies: config.console.secure_cookies,
        session_ttl: config.console.session_ttl,
        sign_in_free_failures: config.console.sign_in_free_failures,
        sign_in_max_delay: config.console.sign_in_max_delay,
        key_sign_in: config.console.key_sign_in || demo,
        require_totp_for_platform: config.console.require_totp_for_platform,
    };
    let console =
        coupond_console::Console::new(state.clone(), settings).context("console_secret")?;
    Ok(coupond_console::router(console))
}

/// Every 5 s: metrics upkeep, idle rate-limit keys dropped, expired idempotency records purged.
fn spawn_upkeep(upkeep_state: AppState) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(5));
        loop {
            tick.tick().await;
            coupond_api::observe::metrics_upkeep();
            upkeep_state.shrink_limits();
            if let Err(e) = upkeep_state.purge_keys().await {
                tracing::warn!(error = %e, "purging expired idempotency records failed");
            }
        }
    })
}

/// Starts every background loop (the self-audit's among them), each supervised: a panic is
/// logged, counted and the loop restarted. They stop between steps once `stop` turns true.
fn start_workers(
    config: &Config,
    state: &AppState,
    store: &Arc<dyn coupond_store::Store>,
    clock: &Arc<dyn Clock>,
    holder: &str,
    stop_rx: &tokio::sync::watch::Receiver<bool>,
    nats: Option<Arc<dyn coupond_engine::Observer>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    // Each loop runs supervised: a panic is logged, counted and the loop restarted.
    let workers = state.workers().clone();
    let codes = supervised(
        "codes",
        &workers,
        stop_rx,
        state.code_generator().clone(),
        coupond_engine::worker::run,
    );
    let issuance = supervised(
        "issuance",
        &workers,
        stop_rx,
        state.issuance_worker().clone(),
        coupond_engine::worker::run,
    );
    let tagging = supervised(
        "tagging",
        &workers,
        stop_rx,
        state.tag_worker().clone(),
        coupond_engine::worker::run,
    );
    // Under leases in the database: with several instances on one PostgreSQL, one of them
    // runs each loop and another takes over if it dies.
    let holder = holder.to_owned();
    let scheduler = supervised(
        "scheduler",
        &workers,
        stop_rx,
        coupond_engine::Scheduler::new(
            store.clone(),
            clock.clone(),
            state.settings().freeze,
            holder.clone(),
        )
        .readers(crate::messaging::readers(config)),
        coupond_engine::worker::run,
    );
    let observers = observers(config, state, store, clock);
    let sender_settings = sender_settings(config);
    let webhooks = supervised(
        "webhooks",
        &workers,
        stop_rx,
        coupond_engine::WebhookSender::new(
            store.clone(),
            clock.clone(),
            sender_settings,
            // The same policy the API checks registrations against.
            state.settings().webhook_targets.clone(),
            holder.clone(),
        ),
        |w, stop| w.run(stop),
    );
    let dispatcher = supervised(
        "dispatcher",
        &workers,
        stop_rx,
        coupond_engine::Dispatcher::new(store.clone(), clock.clone(), observers, holder.clone())
            .paced(config.background.txn_target),
        coupond_engine::worker::run,
    );
    // NATS under a lease of its own: while it is down, its publishes wait out their timeout
    // without delaying the other consumers or stretching their lease.
    let nats = nats.map(|n| {
        let d = coupond_engine::Dispatcher::under_lease(
            "nats",
            store.clone(),
            clock.clone(),
            vec![n],
            holder.clone(),
        );
        supervised("nats", &workers, stop_rx, d, coupond_engine::worker::run)
    });
    // The self-audit under its own lease: one instance audits the database at a time.
    // Users seen by their requests, written in batches (any number of instances: each writes
    // its own, the store keeps the later instant).
    let seen = supervised(
        "seen",
        &workers,
        stop_rx,
        state.seen().clone(),
        coupond_engine::worker::run,
    );
    let audit = supervised(
        "audit",
        &workers,
        stop_rx,
        state.auditor().clone().holder(holder.clone()),
        coupond_engine::worker::run,
    );
    // The performance report's settled hours, counted ahead of the first request (one
    // instance at a time, under the `figures` lease).
    let figures = supervised(
        "figures",
        &workers,
        stop_rx,
        coupond_engine::FiguresKeeper::new(store.clone(), clock.clone(), holder.clone()),
        coupond_engine::worker::run,
    );
    let mut all = vec![
        codes, issuance, tagging, scheduler, webhooks, dispatcher, audit, seen, figures,
    ];
    all.extend(nats);
    all
}

/// The outbox's consumers, in the order the dispatcher hands them each batch.
fn observers(
    config: &Config,
    state: &AppState,
    store: &Arc<dyn coupond_store::Store>,
    clock: &Arc<dyn Clock>,
) -> Vec<Arc<dyn coupond_engine::Observer>> {
    vec![
        Arc::new(
            coupond_engine::ReminderPlanner::new(
                store.clone(),
                config.background.reminder_days_before,
            )
            // Checked when the configuration loaded.
            .local(
                config.platform.time_zone,
                config.messages.reminder_at().unwrap_or_default(),
            ),
        ),
        Arc::new(
            coupond_engine::InboxNotifier::new(store.clone(), clock.clone())
                .readers(crate::messaging::readers(config)),
        ),
        Arc::new(coupond_engine::WebhookFanout::new(
            store.clone(),
            clock.clone(),
        )),
        Arc::new(coupond_app::invalidate::CacheInvalidator::new(
            state.app().clone(),
        )),
    ]
}

/// Runs the notifier (under its own `messages` lease, as NATS runs under its own: a slow
/// template lookup or a large batch never holds up the other consumers), the couriers, and
/// the campaign sender (under its own lease; woken by the API when a message is recorded).
fn start_messaging(
    m: crate::messaging::Messaging,
    state: &AppState,
    store: &Arc<dyn coupond_store::Store>,
    clock: &Arc<dyn Clock>,
    holder: &str,
    stop_rx: &tokio::sync::watch::Receiver<bool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let workers = state.workers().clone();
    let sender = coupond_engine::messaging::CampaignSender::new(
        store.clone(),
        clock.clone(),
        m.rules,
        holder,
        state.campaign_messages().clone(),
    );
    let mut all = vec![supervised(
        "campaign-messages",
        &workers,
        stop_rx,
        sender,
        coupond_engine::worker::run,
    )];
    if let Some(notifier) = m.notifier {
        let d = coupond_engine::Dispatcher::under_lease(
            "messages",
            store.clone(),
            clock.clone(),
            vec![notifier],
            holder.to_owned(),
        );
        all.push(supervised(
            "messages",
            &workers,
            stop_rx,
            d,
            coupond_engine::worker::run,
        ));
    }
    for c in m.couriers {
        let name = coupond_engine::Worker::name(&c);
        all.push(supervised(
            name,
            &workers,
            stop_rx,
            c,
            coupond_engine::worker::run,
        ));
    }
    all
}

/// How the webhook sender retries, waits and spreads its deliveries.
fn sender_settings(config: &Config) -> coupond_engine::SenderSettings {
    coupond_engine::SenderSettings {
        retry: coupond_engine::RetryPolicy {
            base: config.webhook.retry_base,
            max_attempts: config.webhook.max_attempts.max(1),
        },
        timeout: config.webhook.timeout,
        concurrency: config.webhook.concurrency.max(1) as usize,
        per_endpoint: config.webhook.concurrency_per_endpoint.max(1) as usize,
        per_owner: config.webhook.concurrency_per_owner.max(1) as usize,
    }
}

/// Loads the demo data and prints the credentials to use it as `export` lines.
async fn print_demo(
    store: &Arc<dyn coupond_store::Store>,
    state: &AppState,
    now: coupond_domain::Timestamp,
    addr: std::net::SocketAddr,
) -> anyhow::Result<()> {
    let freeze = state.settings().freeze;
    let creds = demo::load(store, state.jwt(), state.accounts(), now, freeze).await?;
    println!(
        "# the console: open http://{addr}/console and sign in with an account below (the demo \
         also lets PLATFORM_KEY and the MERCHANT keys in; console.key_sign_in is off otherwise)"
    );
    println!("# coupond demo: paste these into the shell you will use curl from");
    println!("export COUPOND={}", format_args!("http://{addr}"));
    for line in creds.lines {
        println!("{line}");
    }
    Ok(())
}

/// After the server stopped: background loops end, queued claims are committed and answered,
/// then the database closes (waiting at most 5 s for connections still in use).
async fn finish(
    upkeep: tokio::task::JoinHandle<()>,
    background: Vec<tokio::task::JoinHandle<()>>,
    engine: coupond_engine::ClaimEngine,
    seen: coupond_engine::Seen,
    store: Arc<dyn coupond_store::Store>,
    instance: &str,
) {
    upkeep.abort();
    for task in background {
        let _ = task.await;
    }
    // The loops have stopped: their leases go at once, so another instance (or this one,
    // restarted) takes them over now rather than when they lapse.
    match store.release_leases(instance).await {
        Ok(n) => tracing::info!(leases = n, "leases released"),
        Err(e) => tracing::warn!(error = %e.chain(), "releasing leases failed; they lapse instead"),
    }
    // Claims already queued are committed and answered before the database closes.
    engine.shutdown().await;
    // Users seen since the seen loop's last pass are written too (the requests are done).
    match tokio::time::timeout(std::time::Duration::from_secs(5), seen.flush()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e.chain(), "writing the users seen last failed"),
        Err(_) => tracing::warn!("writing the users seen last took over 5s; left unwritten"),
    }
    // Closing waits for checked-out connections; a request still running past the grace
    // period must not hold the process up forever.
    if tokio::time::timeout(std::time::Duration::from_secs(5), store.close())
        .await
        .is_err()
    {
        tracing::warn!("database connections still busy after 5s; exiting anyway");
    }
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

/// Runs `run(worker.clone(), stop)` under [`coupond_engine::supervise`]: restarted from a fresh
/// clone of `worker` after a panic, each restart recorded in `workers` (shown on `/readyz`).
pub(crate) fn supervised<W, Fut>(
    name: &'static str,
    workers: &coupond_engine::supervise::Workers,
    stop: &tokio::sync::watch::Receiver<bool>,
    worker: W,
    run: fn(W, tokio::sync::watch::Receiver<bool>) -> Fut,
) -> tokio::task::JoinHandle<()>
where
    W: Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let rx = stop.clone();
    coupond_engine::supervise::supervise(name, workers.clone(), stop.clone(), move || {
        run(worker.clone(), rx.clone())
    })
}
