//! Time and events with a manual clock: an activity's whole life drives its template, the
//! listing search and the events (each once, in order, also across downtime); the inbox and
//! reminders follow claims and uses.

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use coupond_domain::Timestamp;
use coupond_engine::{Dispatcher, InboxNotifier, Observer, ReminderPlanner, Scheduler};
use coupond_store::events::kind;
use serde_json::{json, Value};

use crate::support::*;

pub(crate) fn scheduler(app: &TestApp) -> Scheduler {
    Scheduler::new(
        app.store.clone(),
        Arc::new(app.clock.clone()),
        time::Duration::minutes(5),
        "test",
    )
}

fn dispatcher(app: &TestApp) -> Dispatcher {
    let clock = Arc::new(app.clock.clone());
    let observers: Vec<Arc<dyn Observer>> = vec![
        Arc::new(ReminderPlanner::new(app.store.clone(), 3)),
        Arc::new(InboxNotifier::new(app.store.clone(), clock.clone())),
    ];
    Dispatcher::new(app.store.clone(), clock, observers, "test")
}

/// Runs the dispatcher until both observers have had every event written so far. On
/// PostgreSQL an event is readable once every older transaction in the cluster has ended
/// (other tests run beside this one), so an empty pass can mean "not yet".
async fn settle(app: &TestApp, d: &Dispatcher, handed: &mut usize) {
    let written = app
        .store
        .inspect()
        .events_after(0, 1_000_000)
        .await
        .unwrap()
        .len();
    for _ in 0..1000 {
        *handed += d.drain().await.unwrap();
        if *handed >= 2 * written {
            assert_eq!(*handed, 2 * written, "each event once to each observer");
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the outbox was not delivered");
}

fn set(app: &TestApp, hours: i64) {
    app.clock.set(Timestamp::parse(&at(hours)).unwrap());
}

/// `(to, at)` of the status events about `subject` = `id`, in outbox order.
async fn statuses(app: &TestApp, event: &str, subject: &str, id: i64) -> Vec<(String, String)> {
    app.store
        .inspect()
        .events_after(0, 10_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == event && e.body[subject] == id)
        .map(|e| (e.body["to"].as_str().unwrap().to_owned(), e.at.to_string()))
        .collect()
}

fn seq(items: &[(&str, i64)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(s, h)| ((*s).to_owned(), at(*h)))
        .collect()
}

async fn live_listings(app: &TestApp) -> Vec<i64> {
    let r = app.get("/v1/listings?has_coupon=true", &app.user).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_i64().unwrap())
        .collect()
}

async fn activity_life(app: TestApp) {
    let s = scheduler(&app);
    // Enrolling hours [2, 24), running [48, 96); the clock at hour 0.
    let activity = app.activity(activity_body(2, 24, 48, 96)).await;
    assert_eq!(s.run_once().await.unwrap().due.transitions, 1, "scheduled");

    set(&app, 3);
    s.run_once().await.unwrap();
    let r = app
        .post("/v1/templates", app.m1(), activity_template(activity, 2000))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let template = r.body["id"].as_i64().unwrap();
    let listing = app
        .post(
            "/v1/listings",
            app.m1(),
            json!({"city_id": 1, "category_id": 1, "title": "Loft", "price": 300000, "deposit": 0}),
        )
        .await
        .body["id"]
        .as_i64()
        .unwrap();
    let r = app
        .call(
            Method::PUT,
            &format!("/v1/listings/{listing}/templates/{template}"),
            Some(app.m1()),
            None,
        )
        .await;
    assert!(r.status.is_success(), "{}", r.body);
    s.run_once().await.unwrap();
    assert!(
        live_listings(&app).await.is_empty(),
        "not claimable before the run"
    );

    // Down from hour 3 to hour 50: frozen (24) and running (48) are both announced, in order.
    set(&app, 50);
    let out = s.run_once().await.unwrap();
    assert!(out.leader);
    assert_eq!(
        live_listings(&app).await,
        vec![listing],
        "claimable once the run starts"
    );
    let claim = app
        .call(
            Method::POST,
            &format!("/v1/templates/{template}/claims"),
            Some(&app.user),
            None,
        )
        .await;
    assert_eq!(claim.status, StatusCode::CREATED, "{}", claim.body);

    // Down again past the run's end (96) and the coupons' expiry (96 + 7 days).
    set(&app, 300);
    let out = s.run_once().await.unwrap();
    assert_eq!(out.due.coupons_expired, 1);
    assert!(live_listings(&app).await.is_empty());
    assert_eq!(
        s.run_once().await.unwrap().due,
        Default::default(),
        "nothing twice"
    );

    assert_eq!(
        statuses(&app, kind::ACTIVITY_STATUS_CHANGED, "activity_id", activity).await,
        seq(&[
            ("scheduled", 0),
            ("enrolling", 2),
            ("frozen", 24),
            ("running", 48),
            ("ended", 96)
        ])
    );
    assert_eq!(
        statuses(&app, kind::TEMPLATE_STATUS_CHANGED, "template_id", template).await,
        seq(&[
            ("scheduled", 3),
            ("active", 48),
            ("ended", 96),
            ("expired", 96 + 168)
        ])
    );
    let expired: Vec<Value> = app
        .store
        .inspect()
        .events_after(0, 10_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == kind::COUPON_EXPIRED)
        .map(|e| e.body)
        .collect();
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0]["coupon_id"], claim.body["id"]);
    let wallet = app.get("/v1/me/coupons", &app.user).await;
    assert_eq!(wallet.body["items"][0]["status"], "expired");
    // A second scheduler (another instance) does nothing while the lease is held.
    let other = Scheduler::new(
        app.store.clone(),
        Arc::new(app.clock.clone()),
        time::Duration::minutes(5),
        "other",
    );
    assert!(!other.run_once().await.unwrap().leader);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_activitys_life_on_sqlite() {
    activity_life(TestApp::new().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_activitys_life_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        activity_life(app).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_activitys_life_on_mysql() {
    if let Some(app) = TestApp::mysql().await {
        activity_life(app).await;
    }
}

async fn inbox_and_reminders(app: TestApp) {
    let (s, d) = (scheduler(&app), dispatcher(&app));
    // A standalone template claimable hours [10, 20); coupons valid until hour 44.
    let r = app
        .post("/v1/templates", app.m1(), standalone_template(10, 20))
        .await;
    let template = r.body["id"].as_i64().unwrap();
    app.post(
        &format!("/v1/templates/{template}/publish"),
        app.m1(),
        json!({}),
    )
    .await;
    set(&app, 11);
    for _ in 0..2 {
        let r = app
            .call(
                Method::POST,
                &format!("/v1/templates/{template}/claims"),
                Some(&app.user),
                None,
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    }
    let mut handed = 0;
    settle(&app, &d, &mut handed).await;
    assert_eq!(d.drain().await.unwrap(), 0, "each event once");
    // A coupon the user claimed itself needs no message (the claim's answer says it); one
    // the platform or a merchant sent in bulk does.
    let inbox = app.get("/v1/me/messages", &app.user).await;
    assert_eq!(inbox.body["items"], json!([]), "{}", inbox.body);
    for _ in 0..3 {
        let sent = app
            .post("/v1/templates", app.m1(), standalone_template(10, 20))
            .await
            .body["id"]
            .as_i64()
            .unwrap();
        app.post(
            &format!("/v1/templates/{sent}/publish"),
            app.m1(),
            json!({}),
        )
        .await;
        let r = app
            .post(
                &format!("/v1/templates/{sent}/issuances"),
                app.m1(),
                json!({"user_ids": ["u-1"]}),
            )
            .await;
        assert_eq!(r.body["state"], "done", "{}", r.body);
    }
    settle(&app, &d, &mut handed).await;
    let inbox = app.get("/v1/me/messages", &app.user).await;
    let kinds: Vec<&str> = inbox.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["coupon_issued"; 3]);
    assert_eq!(
        inbox.body["items"][0]["title"],
        "You received a coupon: 10% off, at most 50"
    );

    // Both coupons expire at hour 44: one reminder, due three days before... which is
    // before they were claimed, so none. A 7-day coupon gets one instead.
    let mut body = standalone_template(10, 20);
    body["validity"] = json!({"type": "relative", "days": 7});
    body["per_user_limit"] = json!(3);
    let week = app.post("/v1/templates", app.m1(), body).await.body["id"]
        .as_i64()
        .unwrap();
    app.post(
        &format!("/v1/templates/{week}/publish"),
        app.m1(),
        json!({}),
    )
    .await;
    let mut coupons = vec![];
    for _ in 0..2 {
        let r = app
            .call(
                Method::POST,
                &format!("/v1/templates/{week}/claims"),
                Some(&app.user),
                None,
            )
            .await;
        coupons.push(r.body["id"].as_i64().unwrap());
    }
    settle(&app, &d, &mut handed).await;
    // Due at hour 11 + 7 days - 3 days = hour 107: one message for both coupons.
    set(&app, 106);
    assert_eq!(s.run_once().await.unwrap().due.reminders, 0);
    set(&app, 108);
    assert_eq!(s.run_once().await.unwrap().due.reminders, 1);
    assert_eq!(s.run_once().await.unwrap().due.reminders, 0, "sent once");
    let inbox = app.get("/v1/me/messages", &app.user).await;
    let items = inbox.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 4, "{}", inbox.body);
    assert_eq!(items[0]["kind"], "reminder");
    assert!(items[0]["title"]
        .as_str()
        .unwrap()
        .starts_with("Expiring soon"));
    // Read it: it moves behind the unread ones.
    let id = items[0]["id"].as_i64().unwrap();
    let r = app
        .call(
            Method::POST,
            &format!("/v1/me/messages/{id}/read"),
            Some(&app.user),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.body["read_at"].is_string());
    let inbox = app.get("/v1/me/messages?limit=3", &app.user).await;
    assert!(inbox.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["read_at"].is_null()));
    let next = inbox.body["next_cursor"].as_str().unwrap();
    let rest = app
        .get(&format!("/v1/me/messages?cursor={next}"), &app.user)
        .await;
    assert_eq!(rest.body["items"][0]["id"], id);
    // Another user cannot read it.
    let other = coupond_api::JwtKeys::new(SECRET)
        .mint(
            &coupond_domain::UserId::parse("u-2").unwrap(),
            app.clock.now_ts(),
            time::Duration::hours(1),
        )
        .unwrap();
    let r = app
        .call(
            Method::POST,
            &format!("/v1/me/messages/{id}/read"),
            Some(&other),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);

    // A user who reads Chinese gets the Chinese text (the platform's, else the shipped one).
    let r = app
        .call(
            Method::PUT,
            "/v1/users/u-2/contact",
            Some(&app.platform),
            Some(json!({"locale": "zh-CN"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let later = app
        .post("/v1/templates", app.m1(), standalone_template(100, 200))
        .await
        .body["id"]
        .as_i64()
        .unwrap();
    app.post(
        &format!("/v1/templates/{later}/publish"),
        app.m1(),
        json!({}),
    )
    .await;
    let r = app
        .post(
            &format!("/v1/templates/{later}/issuances"),
            app.m1(),
            json!({"user_ids": ["u-2"]}),
        )
        .await;
    assert_eq!(r.body["issued"], 1, "{}", r.body);
    settle(&app, &d, &mut handed).await;
    let got = app
        .store
        .user_messages(&coupond_domain::UserId::parse("u-2").unwrap(), None, 5)
        .await
        .unwrap();
    assert_eq!(
        got[0].title, "您收到一张优惠券：10% off, at most 50",
        "{got:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbox_and_reminders_on_sqlite() {
    inbox_and_reminders(TestApp::new().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbox_and_reminders_on_postgres() {
    if let Some(app) = TestApp::postgres().await {
        inbox_and_reminders(app).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbox_and_reminders_on_mysql() {
    if let Some(app) = TestApp::mysql().await {
        inbox_and_reminders(app).await;
    }
}

/// A template aborted through this process's API leaves its cache at once; one changed
/// elsewhere (another instance, without Redis) reaches it through the outbox, without waiting
/// out `cache_ttl`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn template_changes_evict_the_cache() {
    let settings = coupond_api::AppSettings {
        cache_ttl: std::time::Duration::from_secs(3600),
        ..Default::default()
    };
    let app = TestApp::with_settings(Backend::Sqlite, settings)
        .await
        .unwrap();
    let mut ids = vec![];
    for _ in 0..2 {
        let r = app
            .post("/v1/templates", app.m1(), standalone_template(10, 20))
            .await;
        let id = r.body["id"].as_i64().unwrap();
        app.post(&format!("/v1/templates/{id}/publish"), app.m1(), json!({}))
            .await;
        ids.push(coupond_domain::TemplateId::new(id).unwrap());
    }
    set(&app, 15);
    let aborted = |t| {
        let state = app.state.clone();
        async move {
            state
                .claimed_template(t)
                .await
                .unwrap()
                .aborted_at
                .is_some()
        }
    };
    for t in &ids {
        assert!(!aborted(*t).await, "cached, live");
    }
    app.post(
        &format!("/v1/templates/{}/abort", ids[0]),
        app.m1(),
        json!({}),
    )
    .await;
    assert!(aborted(ids[0]).await, "the route forgot its copy at once");
    // Another instance aborts the second.
    let other = app.store.template(ids[1]).await.unwrap();
    let freeze = time::Duration::minutes(5);
    coupond_engine::campaigns::abort_template(
        app.store.as_ref(),
        &other,
        true,
        app.state.now(),
        freeze,
    )
    .await
    .unwrap();
    assert!(!aborted(ids[1]).await, "still cached here");
    scheduler(&app).run_once().await.unwrap();
    let clock = Arc::new(app.clock.clone());
    let observers: Vec<Arc<dyn Observer>> = vec![Arc::new(
        coupond_app::invalidate::CacheInvalidator::new(app.state.app().clone()),
    )];
    Dispatcher::new(app.store.clone(), clock, observers, "test")
        .drain()
        .await
        .unwrap();
    assert!(
        aborted(ids[1]).await,
        "evicted through the outbox and read again"
    );
}

/// A template's own `reminder_days_before` wins over the service's (3 days here).
async fn a_template_sets_its_own_reminder_lead(app: TestApp) {
    let (s, d, mut handed) = (scheduler(&app), dispatcher(&app), 0);
    let mut body = standalone_template(10, 20);
    body["validity"] = json!({"type": "relative", "days": 7});
    body["reminder_days_before"] = json!(1);
    let r = app.post("/v1/templates", app.m1(), body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["reminder_days_before"], 1);
    let t = r.body["id"].as_i64().unwrap();
    let bad = json!({"reminder_days_before": 0});
    let r = app
        .patch(&format!("/v1/templates/{t}"), app.m1(), bad)
        .await;
    assert_eq!(
        (r.status, r.body["field"].as_str()),
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            Some("reminder_days_before")
        ),
        "{}",
        r.body
    );
    app.post(&format!("/v1/templates/{t}/publish"), app.m1(), json!({}))
        .await;
    set(&app, 11);
    let path = format!("/v1/templates/{t}/claims");
    let r = app.call(Method::POST, &path, Some(&app.user), None).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    settle(&app, &d, &mut handed).await;
    // Claimed at hour 11, valid 7 days: due a day before, at hour 155 (not at 107).
    set(&app, 108);
    assert_eq!(s.run_once().await.unwrap().due.reminders, 0);
    set(&app, 154);
    assert_eq!(s.run_once().await.unwrap().due.reminders, 0);
    set(&app, 156);
    assert_eq!(s.run_once().await.unwrap().due.reminders, 1);
}

crate::on_every_backend!(a_template_sets_its_own_reminder_lead);
