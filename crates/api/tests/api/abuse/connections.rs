//! One user on many connections: the per-user limit and rate hold.

use super::*;

/// `n` claims of `template` at once, all by user `u-1` with its own token, each from another
/// address, every third with an Idempotency-Key of its own; the answers by code.
async fn one_user_many_connections(
    app: &Arc<TestApp>,
    template: i64,
    n: u32,
) -> BTreeMap<String, usize> {
    let mut joins = vec![];
    for i in 0..n {
        let app = app.clone();
        joins.push(tokio::spawn(async move {
            let mut req = request(
                Method::POST,
                &format!("/v1/templates/{template}/claims"),
                &app.user,
                Some(address(i)),
                None,
            );
            if i % 3 == 0 {
                req.headers_mut()
                    .insert("idempotency-key", format!("tab-{i}").parse().unwrap());
            }
            let r = app.send(req).await;
            match r.status {
                StatusCode::CREATED => "created".to_owned(),
                StatusCode::TOO_MANY_REQUESTS => {
                    assert!(r.headers.contains_key(header::RETRY_AFTER));
                    r.code().to_owned()
                }
                StatusCode::CONFLICT => r.code().to_owned(),
                other => panic!("{other}: {}", r.body),
            }
        }));
    }
    let mut counts = BTreeMap::new();
    for j in joins {
        *counts.entry(j.await.unwrap()).or_insert(0) += 1;
    }
    counts
}

/// The template's counters agree with its coupons, all of them `u-1`'s.
async fn audit(app: &TestApp, template: i64) -> i64 {
    let id = TemplateId::new(template).unwrap();
    let t = app.store.template(id).await.unwrap();
    let owners = app.store.inspect().coupon_owners(id).await.unwrap();
    assert_eq!(t.claimed, owners.len() as i64);
    assert!(
        owners.iter().all(|(_, u)| u.as_str() == "u-1"),
        "{owners:?}"
    );
    let violations = app
        .store
        .audit(app.clock.now_ts(), time::Duration::minutes(1))
        .await
        .unwrap();
    assert!(violations.is_empty(), "{violations:?}");
    t.claimed
}

async fn per_user_limit_across_connections(app: TestApp) {
    let app = Arc::new(app);
    let template = live(&app, 1_000, 3, json!({})).await;
    let counts = one_user_many_connections(&app, template, 120).await;
    assert_eq!(counts.get("created"), Some(&3), "{counts:?}");
    assert_eq!(counts.get("limit_reached"), Some(&117), "{counts:?}");
    assert_eq!(audit(&app, template).await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_user_on_many_connections_gets_its_limit_only_on_sqlite() {
    per_user_limit_across_connections(TestApp::new().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_user_on_many_connections_gets_its_limit_only_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        per_user_limit_across_connections(app).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_user_on_many_connections_gets_its_limit_only_on_mysql() {
    if let Some(app) = TestApp::mysql().await {
        per_user_limit_across_connections(app).await;
    }
}

/// The per-user claim rate counts the user's claims from every address together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_user_on_many_connections_is_rate_limited_as_one() {
    let settings = serve_limits();
    let rate = settings.claim_rate_per_user;
    let app = Arc::new(
        TestApp::with_settings(Backend::Sqlite, settings)
            .await
            .unwrap(),
    );
    let template = live(&app, 1_000, 100, json!({})).await;
    let start = Instant::now();
    let counts = one_user_many_connections(&app, template, 200).await;
    let elapsed = start.elapsed();
    let created = counts.get("created").copied().unwrap_or(0);
    let limited = counts.get("rate_limited").copied().unwrap_or(0);
    assert_eq!(created + limited, 200, "{counts:?}");
    assert!(created >= rate.burst as usize, "{counts:?}");
    assert!(
        created <= admitted_at_most(rate, elapsed),
        "{counts:?} in {elapsed:?}"
    );
    assert_eq!(audit(&app, template).await, created as i64);
}
