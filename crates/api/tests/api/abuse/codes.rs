//! Ten thousand wrong codes: rate limited, uniform refusals, nothing claimed.

use super::*;

/// The parts of an answer a prober can compare: status, headers, body.
type Visible = (StatusCode, Vec<(String, String)>, Value);

/// Everything a prober can compare between two answers: the status, every header but the
/// request id and the length, and the body but the request id.
fn visible(r: &Reply) -> Visible {
    let mut headers: Vec<(String, String)> = r
        .headers
        .iter()
        .filter(|(name, _)| *name != "x-request-id" && *name != header::CONTENT_LENGTH)
        .map(|(name, v)| (name.to_string(), v.to_str().unwrap_or("?").to_owned()))
        .collect();
    headers.sort();
    let mut body = r.body.clone();
    if let Some(o) = body.as_object_mut() {
        o.remove("request_id");
    }
    (r.status, headers, body)
}

/// Codes that cannot be redeemed, each for another reason, as path segments; the first are
/// the ones a prober would most like to tell apart. Redeeming one real code on the way shows
/// that the codes work.
async fn unusable_codes(app: &TestApp) -> Vec<(&'static str, String)> {
    let batch = |template: i64, cred: String, count: u32, prefix: &'static str| async move {
        let r = app
            .post(
                &format!("/v1/templates/{template}/codes"),
                &cred,
                json!({"count": count, "prefix": prefix, "length": 8}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        let id = r.body["id"].as_i64().unwrap();
        // The CSV, as text.
        let req = request(
            Method::GET,
            &format!("/v1/code-batches/{id}/codes"),
            &cred,
            None,
            None,
        );
        let res = tower::ServiceExt::oneshot(app.router.clone(), req)
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        let bytes = http_body_util::BodyExt::collect(res.into_body())
            .await
            .unwrap()
            .to_bytes();
        String::from_utf8(bytes.to_vec())
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| l.split(',').next().unwrap().to_owned())
            .collect::<Vec<String>>()
    };
    let shared = |template: i64, cred: String, code: &'static str| async move {
        let r = app
            .call(
                Method::PUT,
                &format!("/v1/templates/{template}/code"),
                Some(&cred),
                Some(json!({"code": code})),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    };
    let publish = |template: i64, cred: String| async move {
        let r = app
            .post(
                &format!("/v1/templates/{template}/publish"),
                &cred,
                json!({}),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    };
    let m1 = app.m1().to_owned();
    let m2 = app.m2().to_owned();

    // Merchant 2's template whose claim window [1, 5) will have ended, and one whose window
    // [30, 40) has not started, made at hour 0.
    let mut codes = vec![];
    for (window, name, shared_name, shared_code) in [
        ((1, 5), "ended", "ended, shared", "ENDEDCODE"),
        ((30, 40), "future", "future, shared", "FUTURECODE"),
    ] {
        let mut body = standalone_template(window.0, window.1);
        body["cities"] = json!([3]);
        let r = app.post("/v1/templates", &m2, body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        let id = r.body["id"].as_i64().unwrap();
        publish(id, m2.clone()).await;
        let generated = batch(id, m2.clone(), 2, "EN").await;
        shared(id, m2.clone(), shared_code).await;
        codes.push((name, generated[0].clone()));
        codes.push((shared_name, shared_code.to_owned()));
    }
    // A draft's codes.
    let r = app
        .post("/v1/templates", &m1, standalone_template(10, 20))
        .await;
    let draft = r.body["id"].as_i64().unwrap();
    let draft_codes = batch(draft, m1.clone(), 2, "DR").await;

    // A live template (the clock moves to hour 15): one code used by someone else, one
    // mistyped, one with two characters swapped.
    let live_id = live(app, 100, 5, json!({})).await;
    let generated = batch(live_id, m1.clone(), 20, "SP").await;
    let r = app
        .post(
            &format!("/v1/codes/{}/redeem", generated[0]),
            &app.service,
            json!({"user_id": "u-owner"}),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "a real code redeems: {}",
        r.body
    );
    let mut typo = generated[1].clone().into_bytes();
    typo[5] = if typo[5] == b'A' { b'B' } else { b'A' };
    let mut swapped = generated[2].clone().into_bytes();
    let at = (3..swapped.len() - 1)
        .find(|&i| swapped[i] != swapped[i + 1])
        .unwrap();
    swapped.swap(at, at + 1);

    // Aborted, code removed, offered to other users only.
    let aborted = live(app, 100, 5, json!({})).await;
    let aborted_codes = batch(aborted, m1.clone(), 2, "AB").await;
    shared(aborted, m1.clone(), "ABORTEDCODE").await;
    let r = app
        .post(&format!("/v1/templates/{aborted}/abort"), &m1, json!({}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let removed = live(app, 100, 5, json!({})).await;
    shared(removed, m1.clone(), "REMOVEDCODE").await;
    let r = app
        .call(
            Method::DELETE,
            &format!("/v1/templates/{removed}/code"),
            Some(&m1),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let vip = live(
        app,
        100,
        5,
        json!({"audience": {"type": "users", "ids": ["vip-1"]}}),
    )
    .await;
    let vip_codes = batch(vip, m1.clone(), 2, "VP").await;
    shared(vip, m1.clone(), "VIPCODE").await;

    let mut out: Vec<(&'static str, String)> = vec![
        ("used by someone else", generated[0].clone()),
        ("mistyped", String::from_utf8(typo).unwrap()),
        ("swapped", String::from_utf8(swapped).unwrap()),
        ("aborted", aborted_codes[0].clone()),
        ("not offered to this user", vip_codes[0].clone()),
        ("aborted, shared", "ABORTEDCODE".to_owned()),
        ("removed", "REMOVEDCODE".to_owned()),
        ("not offered, shared", "VIPCODE".to_owned()),
        ("draft", draft_codes[0].clone()),
        (
            "used, typed loosely",
            format!("{}-{}", &generated[0][..4], &generated[0][4..]).to_lowercase(),
        ),
        ("too short", "AB".to_owned()),
        ("too long", "X".repeat(41)),
        ("punctuation", "%21%21%21%21".to_owned()),
        ("NUL", "%00%00%00%00".to_owned()),
        ("not ASCII", "%C3%84%C3%96%C3%9C%C3%9F".to_owned()),
        ("slash", "SPRING%2F24".to_owned()),
    ];
    out.extend(codes);
    out
}

/// A code that passes the check character but was never generated: the `n`-th of a prober's
/// enumeration.
fn guessed(n: usize) -> String {
    let mut body = String::from("SP");
    let mut k = n;
    for _ in 0..8 {
        body.push(ALPHABET[k % ALPHABET.len()] as char);
        k /= ALPHABET.len();
    }
    with_check(&body).unwrap()
}

/// The answers of a flood of redemptions: refusals (all alike) and 429s.
#[derive(Default)]
struct Tally {
    refusal: Option<Visible>,
    refused: usize,
    limited: usize,
    refused_by_key: BTreeMap<String, usize>,
}

impl Tally {
    fn record(&mut self, r: &Reply, key: &str, what: &str) {
        if r.status == StatusCode::TOO_MANY_REQUESTS {
            assert_eq!(r.code(), "rate_limited", "{what}: {}", r.body);
            let retry: u64 = r.headers[header::RETRY_AFTER]
                .to_str()
                .unwrap()
                .parse()
                .unwrap();
            assert!(retry >= 1, "{what}: Retry-After {retry}");
            assert!(r.body.get("field").is_none(), "{what}: {}", r.body);
            self.limited += 1;
            return;
        }
        let seen = visible(r);
        match &self.refusal {
            None => {
                assert_problem(r, StatusCode::NOT_FOUND, "invalid_code", Some("code"), what);
                assert!(!r.headers.contains_key(header::RETRY_AFTER));
                self.refusal = Some(seen);
            }
            Some(first) => assert_eq!(&seen, first, "{what} is told apart from the others"),
        }
        self.refused += 1;
        *self.refused_by_key.entry(key.to_owned()).or_insert(0) += 1;
    }
}

/// The wallet of each user is empty and nothing at all was written.
async fn nothing_claimed(app: &TestApp, before: &[String], users: &[&str]) {
    for u in users {
        let r = app.get("/v1/me/coupons", &token(app, u)).await;
        assert_eq!(r.body["items"], json!([]), "{u}");
    }
    assert_unchanged(before, &dump(app).await, "a flood of wrong codes");
}

#[tokio::test]
async fn ten_thousand_wrong_codes_from_one_user() {
    let settings = serve_limits();
    let (per_user, per_ip) = (settings.redeem_rate_per_user, settings.redeem_rate_per_ip);
    let app = TestApp::with_settings(Backend::Sqlite, settings)
        .await
        .unwrap();
    let codes = unusable_codes(&app).await;
    let before = dump(&app).await;
    let ip = address(1);
    let mut tally = Tally::default();
    let start = Instant::now();
    for i in 0..10_000 {
        let (what, code) = match codes.get(i) {
            Some((what, code)) => (*what, code.clone()),
            None => ("guessed", guessed(i)),
        };
        let r = app
            .send(request(
                Method::POST,
                &format!("/v1/codes/{code}/redeem"),
                &app.user,
                Some(ip),
                None,
            ))
            .await;
        tally.record(&r, "u-1", &format!("{what} ({code})"));
    }
    let elapsed = start.elapsed();
    assert_eq!(tally.refused + tally.limited, 10_000);
    // The first attempts (the burst) were looked at, and answered alike whatever the reason.
    assert!(
        tally.refused >= per_user.burst as usize,
        "{}",
        tally.refused
    );
    let bound = admitted_at_most(per_user, elapsed).min(admitted_at_most(per_ip, elapsed));
    assert!(
        tally.refused <= bound,
        "{} attempts looked at in {elapsed:?}; the limit allows {bound}",
        tally.refused
    );
    nothing_claimed(&app, &before, &["u-1"]).await;
    // The limit is this user's: another user on another address is answered.
    let r = app
        .send(request(
            Method::POST,
            "/v1/codes/NOSUCHCODE/redeem",
            &token(&app, "u-2"),
            Some(address(2)),
            None,
        ))
        .await;
    assert_problem(
        &r,
        StatusCode::NOT_FOUND,
        "invalid_code",
        Some("code"),
        "u-2",
    );
}

#[tokio::test]
async fn ten_thousand_wrong_codes_from_many_users_behind_one_address() {
    let settings = serve_limits();
    let per_ip = settings.redeem_rate_per_ip;
    let app = TestApp::with_settings(Backend::Sqlite, settings)
        .await
        .unwrap();
    let codes = unusable_codes(&app).await;
    let before = dump(&app).await;
    let users: Vec<String> = (0..10_000).map(|i| format!("bot-{i}")).collect();
    let tokens: Vec<String> = users.iter().map(|u| token(&app, u)).collect();
    let ip = address(7);
    let mut tally = Tally::default();
    let mut looked_at = std::collections::BTreeSet::new();
    let start = Instant::now();
    for (i, t) in tokens.iter().enumerate() {
        let (what, code) = codes
            .get(i % (codes.len() + 1))
            .map(|(w, c)| (*w, c.clone()))
            .unwrap_or(("guessed", guessed(i)));
        let r = app
            .send(request(
                Method::POST,
                &format!("/v1/codes/{code}/redeem"),
                t,
                Some(ip),
                None,
            ))
            .await;
        tally.record(
            &r,
            "the address",
            &format!("{what} ({code}) by {}", users[i]),
        );
        if r.status != StatusCode::TOO_MANY_REQUESTS {
            looked_at.insert(what);
        }
    }
    let elapsed = start.elapsed();
    assert_eq!(tally.refused + tally.limited, 10_000);
    assert!(tally.refused >= per_ip.burst as usize, "{}", tally.refused);
    // The address's burst reached every kind of code, and all were answered alike.
    assert_eq!(looked_at.len(), codes.len() + 1, "{looked_at:?}");
    let bound = admitted_at_most(per_ip, elapsed);
    assert!(
        tally.refused <= bound,
        "{} attempts from one address looked at in {elapsed:?}; the limit allows {bound}",
        tally.refused
    );
    nothing_claimed(&app, &before, &["bot-0", "bot-1", "bot-9999"]).await;
    // Another address is not held back.
    let r = app
        .send(request(
            Method::POST,
            "/v1/codes/NOSUCHCODE/redeem",
            &token(&app, "bot-0"),
            Some(address(8)),
            None,
        ))
        .await;
    assert_problem(
        &r,
        StatusCode::NOT_FOUND,
        "invalid_code",
        Some("code"),
        "another address",
    );
}

/// A botnet: 250 users on 250 addresses, 40 attempts each, every kind of unusable code. No
/// address limit applies; each user's does, and the answers must tell nothing apart.
#[tokio::test]
async fn ten_thousand_wrong_codes_from_many_users_on_many_addresses() {
    const USERS: usize = 250;
    const ROUNDS: usize = 40;
    let settings = serve_limits();
    let per_user = settings.redeem_rate_per_user;
    let app = TestApp::with_settings(Backend::Sqlite, settings)
        .await
        .unwrap();
    let codes = unusable_codes(&app).await;
    let before = dump(&app).await;
    let users: Vec<String> = (0..USERS).map(|i| format!("bot-{i}")).collect();
    let tokens: Vec<String> = users.iter().map(|u| token(&app, u)).collect();
    let mut tally = Tally::default();
    let mut looked_at = std::collections::BTreeSet::new();
    let start = Instant::now();
    for round in 0..ROUNDS {
        for (i, t) in tokens.iter().enumerate() {
            let n = round * USERS + i;
            let (what, code) = codes
                .get(n % (codes.len() + 1))
                .map(|(w, c)| (*w, c.clone()))
                .unwrap_or(("guessed", guessed(n)));
            let r = app
                .send(request(
                    Method::POST,
                    &format!("/v1/codes/{code}/redeem"),
                    t,
                    Some(address(i as u32)),
                    None,
                ))
                .await;
            tally.record(&r, &users[i], &format!("{what} ({code}) by {}", users[i]));
            if r.status != StatusCode::TOO_MANY_REQUESTS {
                looked_at.insert(what);
            }
        }
    }
    let elapsed = start.elapsed();
    assert_eq!(tally.refused + tally.limited, USERS * ROUNDS);
    // Every kind of code was looked at, and all were answered alike.
    assert_eq!(looked_at.len(), codes.len() + 1, "{looked_at:?}");
    assert!(
        tally.refused >= USERS * per_user.burst as usize,
        "{}",
        tally.refused
    );
    let bound = admitted_at_most(per_user, elapsed);
    assert!(bound < ROUNDS, "the run took {elapsed:?}: too slow to tell");
    for (user, n) in &tally.refused_by_key {
        assert!(
            *n <= bound,
            "{user}: {n} attempts looked at in {elapsed:?}; the limit allows {bound}"
        );
    }
    nothing_claimed(&app, &before, &["bot-0", "bot-249"]).await;
}
