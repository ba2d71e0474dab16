//! Email and SMS against real parts: a real SMTP server (aiosmtpd, `support/smtp_sink.py`)
//! and a local HTTP server that checks each request against Twilio's documented Messages API.
//!
//! - A claimed coupon produces one email with the user's locale's text, a `Message-ID`, the
//!   `List-Unsubscribe` headers and link; a user who unsubscribed from email gets none.
//! - With the SMTP server down the email is retried later, nothing lost; back up, it is sent
//!   once; a pass after that sends nothing again.
//! - An SMS is a form POST with Basic auth; 429 is retried after the provider's
//!   `Retry-After`; a message due in the recipient's quiet hours waits for their end.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use coupond_domain::messaging::{
    Channel, Contact, ContactDraft, MessageKind, Preferences, QuietHours,
};
use coupond_domain::{Timestamp, UserId, Zone};
use coupond_engine::dispatch::Dispatcher;
use coupond_engine::messaging::{
    ChannelRules, Courier, MessagingRules, Notifier, SmtpTransport, TwilioTransport, Unsubscribe,
};
use coupond_engine::{ClaimAsk, ClaimEngine, ClaimMode, ManualClock};
use coupond_store::testing::fixtures::{at, claimable_template};
use coupond_store::{OutboundQuery, OutboundStatus, Store};
use coupond_store_sqlite::SqliteDb;

/// A running `smtp_sink.py`; killed on drop.
struct Sink(Child);

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts the SMTP sink on `port`, appending to `out`; `None` (after saying SKIP) when
/// Python's aiosmtpd is not installed (`.ci/run` installs it).
fn sink(port: u16, out: &std::path::Path) -> Option<Sink> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/smtp_sink.py");
    let mut child = Command::new("python3")
        .args([script, &port.to_string(), out.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .ok()?;
    if first.trim() != "ready" {
        let _ = child.kill();
        println!("SKIP: the SMTP sink did not start (is aiosmtpd installed? pip install aiosmtpd)");
        return None;
    }
    Some(Sink(child))
}

fn received(out: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn email_rules() -> ChannelRules {
    ChannelRules {
        channel: Channel::Email,
        kinds: MessageKind::ALL.to_vec(),
        quiet: QuietHours::NONE,
        per_second: 100,
        max_attempts: 5,
    }
}

fn contact(email: Option<&str>, phone: Option<&str>, locale: &str) -> Contact {
    Contact::try_from(ContactDraft {
        email: email.map(str::to_owned),
        phone: phone.map(str::to_owned),
        locale: Some(locale.into()),
        time_zone: Some("Asia/Shanghai".into()),
    })
    .unwrap()
}

async fn store(dir: &tempfile::TempDir) -> Arc<dyn Store> {
    let url = format!("sqlite://{}/messages.db", dir.path().display());
    let s = SqliteDb::connect(&url).await.unwrap();
    s.migrate().await.unwrap();
    Arc::new(s)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_emails_its_user_once_in_their_language_even_across_an_outage() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mail.jsonl");
    let port = free_port();
    let Some(server) = sink(port, &out) else {
        return;
    };
    let store = store(&dir).await;
    let clock = ManualClock::new(at(15));
    let clock_arc: Arc<dyn coupond_engine::clock::Clock> = Arc::new(clock.clone());
    let t = claimable_template(store.as_ref(), 100, 1).await;
    let (ann, bob, cy) = (
        UserId::parse("ann").unwrap(),
        UserId::parse("bob").unwrap(),
        UserId::parse("cy").unwrap(),
    );
    store
        .put_contact(
            &ann,
            &contact(Some("ann@example.com"), None, "zh-CN"),
            at(1),
        )
        .await
        .unwrap();
    store
        .put_contact(&bob, &contact(Some("bob@example.com"), None, "en"), at(1))
        .await
        .unwrap();
    store
        .put_contact(&cy, &contact(Some("cy@example.com"), None, "en-GB"), at(1))
        .await
        .unwrap();
    let mut opted_out = Preferences::default();
    opted_out.unsubscribe(Channel::Email);
    store
        .put_preferences(&bob, &opted_out, at(1))
        .await
        .unwrap();

    let rules = MessagingRules {
        readers: coupond_engine::messaging::Readers {
            zone: Zone::UTC,
            locale: coupond_domain::messaging::Locale::english(),
        },
        channels: vec![email_rules()],
    };
    let notify = Dispatcher::under_lease(
        "messages",
        store.clone(),
        clock_arc.clone(),
        vec![Arc::new(Notifier::new(
            store.clone(),
            clock_arc.clone(),
            rules,
        ))],
        "test",
    );
    let unsubscribe = Unsubscribe::new(b"a secret of the service", "https://coupons.example");
    let smtp_url = format!("smtp://127.0.0.1:{port}?tls=none").into();
    let transport = SmtpTransport::new(
        &smtp_url,
        "Coupons <coupons@example.com>",
        unsubscribe.clone(),
    )
    .unwrap();
    let courier = Courier::new(
        store.clone(),
        clock_arc.clone(),
        email_rules(),
        Arc::new(transport),
        "test",
    );
    let engine = ClaimEngine::new(
        store.clone(),
        clock_arc.clone(),
        ClaimMode::Batched { max_batch: 16 },
    );
    for u in [&ann, &bob] {
        engine
            .claim(&t, ClaimAsk::by_user(u.clone()))
            .await
            .unwrap();
    }
    notify.drain().await.unwrap();
    // Handed out again (a crash before the position moved): nothing queued twice.
    let queued = store
        .outbound(&OutboundQuery {
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(queued.len(), 1, "only ann's: bob unsubscribed");
    assert_eq!(courier.run_once().await.unwrap().sent, 1);

    let mail = received(&out);
    assert_eq!(mail.len(), 1);
    let m = &mail[0];
    assert_eq!(m["rcpt"], serde_json::json!(["ann@example.com"]));
    assert_eq!(m["subject"], format!("领取成功：{}", t.spec.title));
    assert!(m["text"].as_str().unwrap().contains("您已领取"), "{m}");
    let link = unsubscribe.link(&ann, Channel::Email);
    assert_eq!(m["list_unsubscribe"], format!("<{link}>"));
    assert_eq!(m["list_unsubscribe_post"], "List-Unsubscribe=One-Click");
    assert!(m["text"].as_str().unwrap().contains(&link));
    assert!(m["html"].as_str().unwrap().contains("Unsubscribe</a>"));
    assert!(m["message_id"]
        .as_str()
        .unwrap()
        .starts_with(&format!("<coupond.{}.", queued[0].id)));

    // The server goes down: cy's email is tried, kept, and retried later.
    drop(server);
    engine
        .claim(&t, ClaimAsk::by_user(cy.clone()))
        .await
        .unwrap();
    notify.drain().await.unwrap();
    let pass = courier.run_once().await.unwrap();
    assert_eq!((pass.sent, pass.retried), (0, 1));
    let waiting = store
        .outbound(&OutboundQuery {
            user_id: Some(cy.clone()),
            limit: 1,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        (waiting[0].status, waiting[0].attempts),
        (OutboundStatus::Queued, 1)
    );
    assert!(
        waiting[0].next_at > coupond_engine::clock::Clock::now(&clock),
        "retried later, not at once"
    );
    // Back up; the retry comes due.
    let _server = sink(port, &out).unwrap();
    clock.advance(time::Duration::minutes(1));
    assert_eq!(courier.run_once().await.unwrap().sent, 1);
    assert_eq!(courier.run_once().await.unwrap().sent, 0);
    notify.drain().await.unwrap();
    let mail = received(&out);
    let ids: std::collections::BTreeSet<_> = mail
        .iter()
        .map(|m| m["message_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!((mail.len(), ids.len()), (2, 2), "each message once");
    assert_eq!(mail[1]["rcpt"], serde_json::json!(["cy@example.com"]));
    // en-GB falls back to English.
    assert_eq!(mail[1]["subject"], format!("Your coupon: {}", t.spec.title));
}

/// What the fake Twilio saw.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(String, String, String)>>>);

async fn fake_twilio(seen: Seen) -> u16 {
    use axum::routing::post;
    let app = axum::Router::new().route(
        "/2010-04-01/Accounts/{sid}/Messages.json",
        post(
            move |axum::extract::Path(sid): axum::extract::Path<String>,
                  headers: axum::http::HeaderMap,
                  body: String| {
                let seen = seen.clone();
                async move {
                    let auth = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_owned();
                    let form = headers
                        .get("content-type")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_owned();
                    let mut all = seen.0.lock().unwrap();
                    all.push((format!("{sid} {auth} {form}"), body, String::new()));
                    // The first request is throttled, as Twilio does past its rate.
                    if all.len() == 1 {
                        return (
                            axum::http::StatusCode::TOO_MANY_REQUESTS,
                            [("retry-after", "7")],
                            "{\"code\": 20429}".to_owned(),
                        );
                    }
                    (
                        axum::http::StatusCode::CREATED,
                        [("retry-after", "0")],
                        "{\"sid\": \"SM0001\", \"status\": \"queued\"}".to_owned(),
                    )
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sms_goes_to_twilio_as_documented_after_quiet_hours_and_a_throttle() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    // 23:30 in Shanghai.
    let clock = ManualClock::new(Timestamp::parse("2027-01-09T15:30:00Z").unwrap());
    let clock_arc: Arc<dyn coupond_engine::clock::Clock> = Arc::new(clock.clone());
    let seen = Seen::default();
    let port = fake_twilio(seen.clone()).await;
    let ann = UserId::parse("ann").unwrap();
    store
        .put_contact(
            &ann,
            &contact(None, Some("+8613800138000"), "zh-Hans"),
            at(1),
        )
        .await
        .unwrap();
    let sms = ChannelRules {
        channel: Channel::Sms,
        kinds: vec![MessageKind::CouponRevoked],
        quiet: QuietHours::parse("21:00-08:00").unwrap(),
        per_second: 1,
        max_attempts: 5,
    };
    let queued = coupond_store::NewOutbound {
        channel: Channel::Sms,
        key: "event:9".into(),
        user_id: Some(ann.clone()),
        kind: MessageKind::CouponRevoked,
        address: "+8613800138000".into(),
        zone: Zone::parse("Asia/Shanghai").unwrap(),
        subject: "优惠券已收回".into(),
        body: "您的优惠券已被收回：测试".into(),
        due_at: coupond_engine::clock::Clock::now(&clock),
    };
    store
        .queue_outbound(&[queued], coupond_engine::clock::Clock::now(&clock))
        .await
        .unwrap();
    let twilio = TwilioTransport::new(
        &format!("http://127.0.0.1:{port}"),
        "AC123",
        "tok".to_owned().into(),
        "+15005550006",
    )
    .unwrap();
    let courier = Courier::new(store.clone(), clock_arc, sms, Arc::new(twilio), "test");
    // Quiet until 08:00 local (00:00 UTC): deferred, nothing sent.
    assert_eq!(courier.run_once().await.unwrap().deferred, 1);
    assert!(seen.0.lock().unwrap().is_empty());
    clock.set(Timestamp::parse("2027-01-10T00:00:00Z").unwrap());
    // Throttled: retried after Twilio's Retry-After (7 s), not before.
    assert_eq!(courier.run_once().await.unwrap().retried, 1);
    clock.advance(time::Duration::seconds(6));
    assert_eq!(courier.run_once().await.unwrap(), Default::default());
    clock.advance(time::Duration::seconds(1));
    assert_eq!(courier.run_once().await.unwrap().sent, 1);
    let log = store
        .outbound(&OutboundQuery {
            limit: 1,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        (log[0].status, log[0].answer.as_deref()),
        (OutboundStatus::Sent, Some("SM0001"))
    );
    let all = seen.0.lock().unwrap();
    assert_eq!(all.len(), 2);
    let (head, body, _) = &all[1];
    use base64::Engine;
    let basic = base64::engine::general_purpose::STANDARD.encode("AC123:tok");
    assert_eq!(
        head,
        &format!("AC123 Basic {basic} application/x-www-form-urlencoded")
    );
    let form: std::collections::BTreeMap<String, String> =
        url::form_urlencoded::parse(body.as_bytes())
            .into_owned()
            .collect();
    assert_eq!(form.get("To").map(String::as_str), Some("+8613800138000"));
    assert_eq!(form.get("From").map(String::as_str), Some("+15005550006"));
    assert_eq!(
        form.get("Body").map(String::as_str),
        Some("您的优惠券已被收回：测试")
    );
}

/// With the platform in Asia/Shanghai, a coupon usable until 2027-01-10 01:00 local (the 9th
/// in UTC) is reminded three local days before its local expiry day, at 10:00 local; the
/// reminder's email names the local date.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reminders_count_local_days_and_go_at_the_local_hour() {
    use coupond_domain::Validity;
    use coupond_engine::dispatch::ReminderPlanner;
    use coupond_engine::Scheduler;
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir).await;
    let shanghai = Zone::parse("Asia/Shanghai").unwrap();
    let until = Timestamp::parse("2027-01-09T17:00:00Z").unwrap();
    let clock = ManualClock::new(at(15));
    let clock_arc: Arc<dyn coupond_engine::clock::Clock> = Arc::new(clock.clone());
    let t = coupond_store::testing::fixtures::claimable_template_with(store.as_ref(), 10, 1, |d| {
        d.validity = Validity::Fixed { from: at(0), until };
    })
    .await;
    let ann = UserId::parse("ann").unwrap();
    let mut c = contact(Some("ann@example.com"), None, "zh-Hans");
    c.zone = None; // the platform's zone applies
    store.put_contact(&ann, &c, at(1)).await.unwrap();
    let planner = ReminderPlanner::new(store.clone(), 3).local(shanghai, Some((10, 0)));
    let rules = MessagingRules {
        readers: coupond_engine::messaging::Readers {
            zone: shanghai,
            locale: coupond_domain::messaging::Locale::english(),
        },
        channels: vec![email_rules()],
    };
    let notifier = Notifier::new(store.clone(), clock_arc.clone(), rules);
    let d = Dispatcher::new(
        store.clone(),
        clock_arc.clone(),
        vec![Arc::new(planner), Arc::new(notifier)],
        "test",
    );
    let engine = ClaimEngine::new(
        store.clone(),
        clock_arc.clone(),
        ClaimMode::Batched { max_batch: 16 },
    );
    engine
        .claim(&t, ClaimAsk::by_user(ann.clone()))
        .await
        .unwrap();
    d.drain().await.unwrap();
    // 10:00 on the 7th in Shanghai is 02:00 UTC; a minute before, nothing is due.
    let due_at = Timestamp::parse("2027-01-07T02:00:00Z").unwrap();
    assert!(store
        .due_reminders(due_at.minus(time::Duration::minutes(1)), 10)
        .await
        .unwrap()
        .is_empty());
    let due = store.due_reminders(due_at, 10).await.unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].due_at, due_at);
    assert_eq!(due[0].day, shanghai.day_of(until));
    assert_eq!(
        due[0].expiring.start,
        Timestamp::parse("2027-01-09T16:00:00Z").unwrap()
    );
    // The scheduler sends it then: the inbox's and the email's.
    clock.set(due_at);
    let s = Scheduler::new(
        store.clone(),
        clock_arc.clone(),
        time::Duration::minutes(5),
        "test",
    );
    assert_eq!(s.run_once().await.unwrap().due.reminders, 1);
    d.drain().await.unwrap();
    let mail = store
        .outbound(&OutboundQuery {
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    let expiring: Vec<_> = mail
        .iter()
        .filter(|m| m.kind == MessageKind::CouponExpiring)
        .collect();
    assert_eq!(expiring.len(), 1, "{mail:?}");
    assert!(
        expiring[0].body.contains("2027-01-10"),
        "{}",
        expiring[0].body
    );
    assert_eq!(expiring[0].zone, shanghai);
    // The inbox's reminder is in Ann's locale too, with the local day and the days left.
    let inbox = store.user_messages(&ann, None, 10).await.unwrap();
    let reminder = inbox.iter().find(|m| m.kind == "reminder").unwrap();
    assert!(
        reminder.title.starts_with("优惠券即将过期：") && reminder.body.contains("2027-01-10"),
        "{reminder:?}"
    );
}
