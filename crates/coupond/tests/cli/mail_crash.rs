//! kill -9 while email goes out: 30 claimed coupons make 30 emails, sent at 5 a second to a
//! real SMTP server (aiosmtpd, `crates/engine/tests/support/smtp_sink.py`); the server is
//! killed with SIGKILL mid-way and restarted on the same database. Afterwards every email was
//! received, each under its own `Message-ID`; the delivery log says every one sent; and at
//! most the one email in flight at the kill arrived twice (at least once to the provider).

use std::collections::BTreeMap;
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use coupond_domain::messaging::{Contact, ContactDraft};
use coupond_domain::UserId;
use coupond_store::testing::fixtures::{at, claimable_template};
use coupond_store::{ClaimRequest, OutboundQuery, OutboundStatus};

use super::crash::free_port;
use super::{start_server, terminate_and_wait};

const USERS: usize = 30;

struct Sink(Child);

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The SMTP sink on `port`, appending to `out`; `None` (SKIP) without aiosmtpd.
fn sink(port: u16, out: &std::path::Path) -> Option<Sink> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../engine/tests/support/smtp_sink.py"
    );
    let mut child = Command::new("python3")
        .args([script, &port.to_string(), out.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .ok()?;
    (first.trim() == "ready").then_some(Sink(child))
}

/// Message-IDs received so far, with how often each came.
fn received(out: &std::path::Path) -> BTreeMap<String, usize> {
    let mut seen = BTreeMap::new();
    for line in std::fs::read_to_string(out).unwrap_or_default().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        *seen
            .entry(v["message_id"].as_str().unwrap().to_owned())
            .or_insert(0) += 1;
    }
    seen
}

/// Waits (bounded) until `done` holds of what the sink received.
fn wait_for(out: &std::path::Path, what: &str, done: impl Fn(&BTreeMap<String, usize>) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while !done(&received(out)) {
        assert!(Instant::now() < deadline, "{what}: {:?}", received(out));
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The delivery log, as the server's database holds it now.
fn delivery_log(db: &str) -> Vec<coupond_store::Outbound> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = super::open_server_store(db).await;
        let log = store
            .outbound(&OutboundQuery {
                limit: 100,
                ..Default::default()
            })
            .await
            .unwrap();
        store.close().await;
        log
    })
}

/// A fresh SQLite database with a template, `USERS` users with email addresses and a coupon
/// claimed by each (their `coupon.claimed` events wait in the outbox).
fn seed(db: &str) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = coupond_store_sqlite::SqliteDb::connect(db).await.unwrap();
        store.migrate().await.unwrap();
        let t = claimable_template(&store, 100, 1).await;
        let mut reqs = Vec::new();
        for i in 0..USERS {
            let user = UserId::parse(&format!("u-{i}")).unwrap();
            let c = Contact::try_from(ContactDraft {
                email: Some(format!("u{i}@example.com")),
                ..ContactDraft::default()
            })
            .unwrap();
            coupond_store::MessagingStore::put_contact(&store, &user, &c, at(1))
                .await
                .unwrap();
            reqs.push(ClaimRequest {
                user,
                actor: coupond_domain::Actor::System,
                valid_from: at(15),
                valid_until: at(40),
                idempotency: None,
                code: None,
                issuance: None,
                channel: Default::default(),
                source: None,
            });
        }
        let out = coupond_store::ClaimStore::claim_batch(&store, t.id, &reqs, at(15))
            .await
            .unwrap();
        assert_eq!(out.len(), USERS);
    });
}

#[test]
fn kill_9_while_sending_email_loses_nothing_and_repeats_at_most_the_one_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mail.jsonl");
    let smtp = free_port();
    let Some(_sink) = sink(smtp, &out) else {
        println!("SKIP mail kill -9 test: the SMTP sink did not start (pip install aiosmtpd)");
        return;
    };
    let db = format!("sqlite://{}/mail.db", dir.path().display());
    seed(&db);
    let url = format!("smtp://127.0.0.1:{smtp}?tls=none");
    let env = [
        ("COUPOND_EMAIL_SMTP_URL", url.as_str()),
        ("COUPOND_EMAIL_PER_SECOND", "5"),
    ];
    let listen = format!("127.0.0.1:{}", free_port());
    let (mut server, _) = start_server(dir.path(), &db, &listen, &env);
    wait_for(&out, "the first emails", |seen| seen.len() >= 5);
    server.kill().unwrap();
    server.wait().unwrap();
    let before = received(&out).len();
    assert!(before < USERS, "killed mid-way: {before} sent");
    let (server, _) = start_server(dir.path(), &db, &listen, &env);
    wait_for(&out, "every email", |seen| seen.len() >= USERS);
    // The email in flight at the kill is claimed for its attempt (`courier::CLAIM`, 45 s):
    // the restarted server sends it again once that claim runs out, and logs it sent.
    let deadline = Instant::now() + Duration::from_secs(120);
    let log = loop {
        let log = delivery_log(&db);
        if log.iter().all(|o| o.status == OutboundStatus::Sent) {
            break log;
        }
        assert!(Instant::now() < deadline, "not all logged sent: {log:?}");
        std::thread::sleep(Duration::from_millis(200));
    };
    terminate_and_wait(server);

    let seen = received(&out);
    assert_eq!(seen.len(), USERS, "one Message-ID per email: {seen:?}");
    let repeats: usize = seen.values().map(|n| n - 1).sum();
    assert!(
        repeats <= 1,
        "at most the email in flight repeats: {seen:?}"
    );
    assert_eq!(log.len(), USERS);
    assert!(
        log.iter().all(|o| o.status == OutboundStatus::Sent),
        "{log:?}"
    );
    for o in &log {
        let id = format!("<coupond.{}.event-", o.id);
        assert!(
            seen.keys().any(|m| m.starts_with(&id)),
            "delivery {} never arrived",
            o.id
        );
    }
}
