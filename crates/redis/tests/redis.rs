//! coupond-redis against a real Redis (`COUPOND_TEST_REDIS_URL`; SKIP without it): limits
//! counted once for several handles (instances), all or none; notices reach the other
//! instances and not their sender; a Redis that is down fails fast.

use std::sync::Arc;
use std::time::Duration;

use coupond_domain::TemplateId;
use coupond_engine::shared::{LimitAsk, Notice, Peers, SharedLimits};
use coupond_redis::{NoticeKey, Redis, RedisSettings};
use tokio::sync::{mpsc, watch};

fn settings(prefix: &str) -> Option<RedisSettings> {
    let Ok(url) = std::env::var("COUPOND_TEST_REDIS_URL") else {
        say("SKIP redis: COUPOND_TEST_REDIS_URL is not set");
        return None;
    };
    say(&format!("redis test `{prefix}` running on Redis"));
    Some(RedisSettings {
        url,
        // Each test (and each run) its own keys.
        key_prefix: format!("coupond-test-{prefix}-{:x}", rand_suffix()),
        timeout: Duration::from_secs(2),
        notice_key: NoticeKey::derive(b"the deployment's shared secret"),
    })
}

/// To stderr itself, past the test harness's capture: `.ci/run` counts these lines.
fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn ask<'a>(name: &'static str, key: &'a str, per_second: u32, burst: u32) -> LimitAsk<'a> {
    LimitAsk {
        name,
        key,
        per_second,
        burst,
    }
}

#[tokio::test]
async fn three_instances_allow_one_burst_between_them() {
    let Some(s) = settings("burst") else { return };
    let instances: Vec<Redis> = (0..3).map(|_| Redis::new(&s).unwrap()).collect();
    // One a second, burst 10.
    let limit = |key| [ask("claim_per_user", key, 1, 10)];
    let started = std::time::Instant::now();
    let mut admitted = 0;
    let mut refused = vec![];
    for i in 0..30 {
        let asks = limit("u-1");
        match instances[i % 3].check(&asks).await.unwrap() {
            None => admitted += 1,
            Some((index, wait)) => refused.push((index, wait)),
        }
    }
    // The burst, plus one per second the test took (and one for where the count started).
    let most = 10 + started.elapsed().as_secs() as usize + 2;
    assert!(
        (10..=most).contains(&admitted),
        "admitted {admitted}, at most {most}"
    );
    assert!(refused
        .iter()
        .all(|(i, w)| *i == 0 && *w <= Duration::from_secs(1)));
    // Another user has a burst of their own.
    assert_eq!(instances[1].check(&limit("u-2")).await.unwrap(), None);
}

#[tokio::test]
async fn a_refusal_counts_in_no_limit() {
    let Some(s) = settings("all-or-none") else {
        return;
    };
    let redis = Redis::new(&s).unwrap();
    // The address's limit is spent...
    assert_eq!(
        redis
            .check(&[ask("per_ip", "10.0.0.1", 1, 1)])
            .await
            .unwrap(),
        None
    );
    // ...so a request from it is refused by its second ask, and the user's limit (burst 1)
    // is not counted: the user's next request from elsewhere is admitted.
    let both = [ask("per_user", "u", 1, 1), ask("per_ip", "10.0.0.1", 1, 1)];
    let (index, _) = redis.check(&both).await.unwrap().expect("refused");
    assert_eq!(index, 1, "the address's limit refused it");
    let elsewhere = [ask("per_user", "u", 1, 1), ask("per_ip", "10.0.0.2", 1, 1)];
    assert_eq!(redis.check(&elsewhere).await.unwrap(), None);
}

#[tokio::test]
async fn notices_reach_the_other_instances_not_their_sender() {
    let Some(s) = settings("notices") else { return };
    let (stop_tx, stop) = watch::channel(false);
    let mut ears = vec![];
    let mut notifiers = vec![];
    for name in ["a", "b"] {
        let redis = Redis::new(&s).unwrap();
        let (tx, rx) = mpsc::unbounded_channel();
        let heard = Arc::new(move |n: &Notice| drop(tx.send(n.clone())));
        let (notifier, publisher, subscriber) = redis.notices(name, heard);
        tokio::spawn(publisher.run(stop.clone()));
        tokio::spawn(subscriber.run(stop.clone()));
        ears.push(rx);
        notifiers.push(notifier);
    }
    // Each subscriber first forgets everything (it may have missed notices before).
    for rx in &mut ears {
        assert_eq!(next(rx).await, Notice::Resync);
    }
    let sold_out = Notice::SoldOut {
        template: TemplateId::new(7).unwrap(),
        stock: 100,
    };
    notifiers[0].tell(sold_out.clone());
    assert_eq!(next(&mut ears[1]).await, sold_out);
    notifiers[1].tell(Notice::KeysChanged);
    // a hears b's notice, and never its own: the first thing a hears is b's.
    assert_eq!(next(&mut ears[0]).await, Notice::KeysChanged);
    stop_tx.send(true).unwrap();
}

/// Whoever can publish on the channel cannot speak for an instance: an unsigned notice, one
/// signed with another deployment's key and a stale one are dropped; the next real one is
/// heard (so the forged ones were not merely late).
#[tokio::test]
async fn forged_and_stale_notices_are_not_heard() {
    let Some(s) = settings("forged") else { return };
    let (stop_tx, stop) = watch::channel(false);
    let redis = Redis::new(&s).unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let heard = Arc::new(move |n: &Notice| drop(tx.send(n.clone())));
    let (_notifier, _publisher, subscriber) = redis.notices("victim", heard);
    tokio::spawn(subscriber.run(stop.clone()));
    assert_eq!(next(&mut rx).await, Notice::Resync);
    let channel = format!("{}:notices", s.key_prefix);
    let forged = r#"{"from":"attacker","at":0,"notice":"sold_out","template":7,"stock":9223372036854775807}"#;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let recent = forged.replace(r#""at":0"#, &format!(r#""at":{now_ms}"#));
    let mut conn = redis::Client::open(s.url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    for message in [
        recent.clone(),
        NoticeKey::derive(b"another deployment").seal(&recent),
        s.notice_key.seal(forged),
    ] {
        let _: i64 = redis::cmd("PUBLISH")
            .arg(&channel)
            .arg(message)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    let other = Redis::new(&s).unwrap();
    other.announce("peer", Notice::KeysChanged).await.unwrap();
    assert_eq!(
        next(&mut rx).await,
        Notice::KeysChanged,
        "an unsigned, foreign-signed or stale notice was heard"
    );
    stop_tx.send(true).unwrap();
}

/// The next notice `rx` hears, within 5 s.
async fn next(rx: &mut mpsc::UnboundedReceiver<Notice>) -> Notice {
    tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("a notice within 5 s")
        .unwrap()
}

#[tokio::test]
async fn a_redis_that_is_down_fails_fast() {
    // Nothing listens on port 1.
    let redis = Redis::new(&RedisSettings {
        url: "redis://127.0.0.1:1/".into(),
        key_prefix: "coupond".into(),
        timeout: Duration::from_millis(200),
        notice_key: NoticeKey::derive(b"secret"),
    })
    .unwrap();
    let started = std::time::Instant::now();
    assert!(redis.check(&[ask("per_user", "u", 1, 1)]).await.is_err());
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(Redis::new(&RedisSettings {
        url: "http://nope".into(),
        key_prefix: "coupond".into(),
        timeout: Duration::from_millis(200),
        notice_key: NoticeKey::derive(b"secret"),
    })
    .is_err());
}

#[tokio::test]
async fn a_redis_that_never_answers_fails_within_the_timeout() {
    // Accepts connections and reads nothing back: a hung Redis, not a refused one.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = silent.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = vec![];
        while let Ok((conn, _)) = silent.accept().await {
            held.push(conn);
        }
    });
    let redis = Redis::new(&RedisSettings {
        url: format!("redis://{addr}/"),
        key_prefix: "coupond".into(),
        timeout: Duration::from_millis(200),
        notice_key: NoticeKey::derive(b"secret"),
    })
    .unwrap();
    // Bounded by the timeout: the claim that asked falls back instead of hanging.
    let checked = tokio::time::timeout(
        Duration::from_secs(10),
        redis.check(&[ask("per_user", "u", 1, 1)]),
    )
    .await
    .expect("the check gave up by itself");
    assert!(checked.is_err());
}
