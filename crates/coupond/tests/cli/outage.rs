//! PostgreSQL lost under load (issue 6, fault 3). A server claims through a TCP proxy to
//! PostgreSQL while a load generator claims with retries by Idempotency-Key. Two faults:
//! - its backends are terminated (`pg_terminate_backend`) over and over;
//! - the proxy cuts every connection and refuses new ones for a few seconds (PostgreSQL
//!   "stopped" for this server only, so the other tests sharing PostgreSQL carry on).
//!
//! What must hold: callers only ever see 503 `unavailable` (with Retry-After) for the outage,
//! never a 500; `/readyz` says 503 while the database is gone and 200 once it is back; the pool
//! recovers by itself; every retried claim resolves to exactly one effect, and the audit is
//! clean.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{get_with_head, start_server, terminate_and_wait, BIN};

/// A TCP proxy to PostgreSQL that can play dead: `cut` closes every proxied connection and
/// makes new ones close at once, `restore` lets them through again.
struct Proxy {
    addr: SocketAddr,
    down: Arc<AtomicBool>,
    /// Both ends of every live proxied connection, so `cut` can shut them down. A connection
    /// leaves the map when its pipes end, so the proxy holds no descriptors for dead ones
    /// (the backend killer makes thousands of them).
    live: Live,
}

type Live = Arc<Mutex<HashMap<u64, (TcpStream, TcpStream)>>>;

impl Proxy {
    fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let down = Arc::new(AtomicBool::new(false));
        let live: Live = Arc::default();
        let (d, l) = (down.clone(), live.clone());
        std::thread::spawn(move || {
            for (id, client) in (0u64..).zip(listener.incoming()) {
                let Ok(client) = client else { continue };
                if d.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                // Out of descriptors: drop this connection (the server retries), never the
                // proxy itself.
                let (Ok(c1), Ok(c2), Ok(s1), Ok(s2)) = (
                    client.try_clone(),
                    client.try_clone(),
                    server.try_clone(),
                    server.try_clone(),
                ) else {
                    continue;
                };
                l.lock().unwrap().insert(id, (c1, s1));
                pipe(c2, s2, id, l.clone());
                pipe(server, client, id, l.clone());
            }
        });
        Proxy { addr, down, live }
    }

    fn cut(&self) {
        self.down.store(true, Ordering::SeqCst);
        for (_, (c, s)) in self.live.lock().unwrap().drain() {
            let _ = c.shutdown(Shutdown::Both);
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    fn restore(&self) {
        self.down.store(false, Ordering::SeqCst);
    }
}

/// Copies `from` to `to` on a thread until either side closes, then forgets connection `id`.
fn pipe(mut from: TcpStream, mut to: TcpStream, id: u64, live: Live) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Both);
        let _ = from.shutdown(Shutdown::Both);
        live.lock().unwrap().remove(&id);
    });
}

/// Polls `/readyz` until it answers `want` (the server decides; this only waits for it).
fn readyz_becomes(base: &str, want: u16, within: Duration) -> Duration {
    let start = Instant::now();
    loop {
        let (status, head, body) = get_with_head(base, "/readyz", None);
        if status == want {
            if want == 503 {
                assert!(body.contains("\"code\":\"unavailable\""), "{body}");
                assert!(head.contains("\r\nretry-after: "), "{head}");
            }
            return start.elapsed();
        }
        assert!(
            start.elapsed() < within,
            "/readyz still {status} after {within:?}: {body}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The loadtest's printed lines for a finished run: (stdout, stderr).
fn finished(out: std::process::Output) -> (String, String) {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    (stdout, stderr)
}

/// The run's answers: only created and sold out in the end, nothing unanswered, and every
/// retry was after a 503 (or a connection the server dropped, or a rate limit), never a 500.
fn assert_resolved(stdout: &str) -> u64 {
    assert!(
        stdout.contains("refused claims left nothing: OK"),
        "{stdout}"
    );
    assert!(stdout.contains("; 0 without an answer;"), "{stdout}");
    let answers = stdout
        .lines()
        .find_map(|l| l.strip_prefix("answers      "))
        .unwrap();
    for a in answers.split(" | ") {
        assert!(
            a.starts_with("201 created") || a.starts_with("409 sold_out"),
            "unexpected final answer {a}: {stdout}"
        );
    }
    let retried = stdout
        .lines()
        .find_map(|l| l.strip_prefix("retried after  "))
        .unwrap_or_default();
    for a in retried.split(" | ").filter(|a| !a.is_empty()) {
        assert!(
            // A retry loop can also trip the per-user claim rate limit: a refusal, not a fault.
            a.starts_with("503 unavailable")
                || a.starts_with("no answer")
                || a.starts_with("429 rate_limited"),
            "a retry followed {a}: {stdout}"
        );
    }
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("retried      "))
        .and_then(|l| l.split(' ').next())
        .map_or(0, |n| n.parse().unwrap())
}

#[test]
fn postgres_lost_under_load_answers_503_and_recovers() {
    // Setup, the backend killer and the audit use `direct`; the server goes through the
    // proxy and names its sessions so that only they are terminated.
    let Some(direct) = super::postgres_schema("outage") else {
        return;
    };
    let opts: sqlx::postgres::PgConnectOptions = direct.parse().unwrap();
    let host_port = format!("{}:{}", opts.get_host(), opts.get_port());
    assert!(
        direct.contains(&host_port),
        "the test URL names host:port: {direct}"
    );
    let upstream = tokio::runtime::Runtime::new().unwrap().block_on(async {
        tokio::net::lookup_host((opts.get_host(), opts.get_port()))
            .await
            .unwrap()
            .next()
            .unwrap()
    });
    let proxy = Proxy::start(upstream);
    let app_name = format!("coupond_outage_{}", std::process::id());
    let proxied = format!(
        "{}&application_name={app_name}",
        direct.replacen(&host_port, &proxy.addr.to_string(), 1)
    );
    let dir = tempfile::tempdir().unwrap();
    let (server, base) = start_server(dir.path(), &proxied, "127.0.0.1:0", &[]);
    readyz_becomes(&base, 200, Duration::from_secs(10));

    let loadtest = |users: &str, stock: &str| {
        Command::new(BIN)
            .current_dir(dir.path())
            .args(["--database", &direct, "loadtest", "--url", &base])
            .args(["--scenario", "custom", "--users", users, "--stock", stock])
            .args(["--concurrency", "32", "--retry-for", "90s"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };

    // Fault 1: terminate the server's backends every 50 ms while 3,000 users claim 2,000.
    let load = loadtest("3000", "2000");
    let killed = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let killer = {
        let (killed, stop, direct, app_name) = (
            killed.clone(),
            stop.clone(),
            direct.clone(),
            app_name.clone(),
        );
        std::thread::spawn(move || {
            let rt = tokio::runtime::Runtime::new().unwrap();
            rt.block_on(async move {
                let admin = sqlx::PgPool::connect(&direct).await.unwrap();
                while !stop.load(Ordering::SeqCst) {
                    let n: i64 = sqlx::query_scalar(
                        "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM \
                         pg_stat_activity WHERE application_name = $1) t",
                    )
                    .bind(&app_name)
                    .fetch_one(&admin)
                    .await
                    .unwrap();
                    killed.fetch_add(n as u64, Ordering::SeqCst);
                    // The fault's rhythm, not a synchronisation.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                admin.close().await;
            });
        })
    };
    let (stdout, _) = finished(load.wait_with_output().unwrap());
    stop.store(true, Ordering::SeqCst);
    killer.join().unwrap();
    let retried = assert_resolved(&stdout);
    let killed = killed.load(Ordering::SeqCst);
    assert!(killed > 0, "no backend was terminated");
    assert!(stdout.contains("201 created: 2000"), "{stdout}");
    eprintln!("outage: {killed} backends terminated, {retried} retries; {stdout}");
    readyz_becomes(&base, 200, Duration::from_secs(15));

    // Fault 2: PostgreSQL gone for 3 s in the middle of a second rush.
    let mut load = loadtest("3000", "2000");
    let progress = load.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        let mut lines = vec![];
        for line in std::io::BufReader::new(progress)
            .lines()
            .map_while(Result::ok)
        {
            if line
                .trim()
                .split('/')
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                >= Some(300)
            {
                let _ = tx.send(());
            }
            lines.push(line);
        }
        lines
    });
    rx.recv_timeout(Duration::from_secs(120))
        .expect("the load test reports progress");
    proxy.cut();
    let noticed = readyz_becomes(&base, 503, Duration::from_secs(30));
    std::thread::sleep(Duration::from_secs(3)); // the outage itself
    proxy.restore();
    let recovered = readyz_becomes(&base, 200, Duration::from_secs(30));
    let (stdout, _) = finished(load.wait_with_output().unwrap());
    let retried = assert_resolved(&stdout);
    assert!(retried > 0, "the outage interrupted no claim: {stdout}");
    assert!(stdout.contains("201 created: 2000"), "{stdout}");
    eprintln!(
        "outage: /readyz 503 after {noticed:?}, 200 again {recovered:?} after the restore; {stdout}"
    );

    assert!(terminate_and_wait(server).success());
    super::crash::assert_audit_clean(dir.path(), &direct);
}
