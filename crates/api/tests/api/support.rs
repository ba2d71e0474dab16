//! `TestApp`: the whole router in-process on a fresh database, a manual clock, and a key for
//! every role.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use coupond_api::auth::{generate_api_key, JwtKeys};
use coupond_api::{AppSettings, AppState};
use coupond_domain::{CityId, CitySet, MerchantDraft, MerchantId, Timestamp, UserId};
use coupond_engine::ManualClock;
use coupond_store::{NewApiKey, Role, Store};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use time::Duration;
use tower::ServiceExt;

pub const SECRET: &[u8] = b"test-secret-of-sufficient-length";

/// Day zero of every test: 2026-03-01T00:00:00Z.
pub fn t0() -> Timestamp {
    Timestamp::parse("2026-03-01T00:00:00Z").unwrap()
}

/// RFC 3339 text for `t0 + hours`.
pub fn at(hours: i64) -> String {
    t0().plus(Duration::hours(hours)).to_string()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
    Mysql,
}

impl Backend {
    /// The variable naming the test server (`None` for SQLite, which needs none).
    fn env(self) -> Option<&'static str> {
        match self {
            Backend::Sqlite => None,
            Backend::Postgres => Some("COUPOND_TEST_POSTGRES_URL"),
            Backend::Mysql => Some("COUPOND_TEST_MYSQL_URL"),
        }
    }

    /// The test server's URL (`Some("")` for SQLite); `None`, after saying so on stderr, when
    /// its variable is not set.
    pub fn url(self) -> Option<String> {
        let Some(var) = self.env() else {
            return Some(String::new());
        };
        let url = std::env::var(var).ok();
        if url.is_none() {
            let name = match self {
                Backend::Mysql => "mysql",
                _ => "postgres",
            };
            // Straight to stderr: libtest captures `eprintln!`, and CI counts these lines.
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                format!("SKIP {name} API test: {var} is not set\n").as_bytes(),
            );
        }
        url
    }
}

pub struct TestApp {
    pub router: Router,
    /// The state behind the router, for driving background work (`code_generator`) by hand.
    pub state: AppState,
    pub store: Arc<dyn Store>,
    pub clock: ManualClock,
    pub platform: String,
    pub service: String,
    /// Merchant 1 (cities 1, 2) and merchant 2 (city 3), with their keys.
    pub merchants: Vec<(MerchantId, String)>,
    /// A token for user `u-1`.
    pub user: String,
    _dir: Option<tempfile::TempDir>,
}

/// A response: status, headers, and the body parsed as JSON (`Null` when empty or not JSON).
pub struct Reply {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: Value,
}

impl Reply {
    /// The problem `code` of an error response.
    pub fn code(&self) -> &str {
        self.body["code"].as_str().unwrap_or("")
    }
}

impl TestApp {
    pub async fn new() -> TestApp {
        Self::with_settings(Backend::Sqlite, AppSettings::default())
            .await
            .unwrap()
    }

    /// On PostgreSQL when `COUPOND_TEST_POSTGRES_URL` is set; `None` (after saying so) when not.
    pub async fn postgres() -> Option<TestApp> {
        Self::with_settings(Backend::Postgres, AppSettings::default()).await
    }

    /// On MySQL (MariaDB) when `COUPOND_TEST_MYSQL_URL` is set; `None` (after saying so) when
    /// not.
    pub async fn mysql() -> Option<TestApp> {
        Self::with_settings(Backend::Mysql, AppSettings::default()).await
    }

    pub async fn with_settings(backend: Backend, settings: AppSettings) -> Option<TestApp> {
        let (store, dir): (Arc<dyn Store>, _) = match backend {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().unwrap();
                let url = format!("sqlite://{}/coupond.db", dir.path().display());
                let s = coupond_store_sqlite::SqliteDb::connect(&url).await.unwrap();
                s.migrate().await.unwrap();
                (Arc::new(s), Some(dir))
            }
            Backend::Postgres => {
                let url = backend.url()?;
                let schema = format!("api_{}", uuid::Uuid::new_v4().simple());
                let s = coupond_store_postgres::PgDb::connect_in_schema(&url, Some(&schema))
                    .await
                    .unwrap();
                s.migrate().await.unwrap();
                let _ = std::io::Write::write_all(
                    &mut std::io::stderr(),
                    format!("postgres API test running on PostgreSQL in schema {schema}\n")
                        .as_bytes(),
                );
                (Arc::new(s), None)
            }
            Backend::Mysql => {
                let url = backend.url()?;
                // A database of its own; MySQL names are at most 64 characters.
                let db = format!("ct_api_{}", uuid::Uuid::new_v4().simple());
                let s = coupond_store_mysql::MysqlDb::connect_in_database(&url, Some(&db))
                    .await
                    .unwrap();
                s.migrate().await.unwrap();
                let _ = std::io::Write::write_all(
                    &mut std::io::stderr(),
                    format!("mysql API test running on MySQL in database {db}\n").as_bytes(),
                );
                (Arc::new(s), None)
            }
        };
        let clock = ManualClock::new(t0());
        // The fixture's user token lives a year of the injected clock.
        let settings = AppSettings {
            max_token_lifetime: settings.max_token_lifetime.max(Duration::days(366)),
            ..settings
        };
        let state = AppState::new(
            coupond_app::App::new(store.clone(), Arc::new(clock.clone()), SECRET, settings),
            SECRET,
        );
        let router = coupond_api::router(state.clone());
        let key = |role, merchant| {
            let store = store.clone();
            async move {
                let k = generate_api_key();
                store
                    .insert_api_key(
                        &NewApiKey {
                            hash: k.hash,
                            prefix: k.prefix,
                            role,
                            merchant_id: merchant,
                            label: String::new(),
                            operator_id: None,
                        },
                        t0(),
                    )
                    .await
                    .unwrap();
                k.secret
            }
        };
        let mut merchants = vec![];
        for (name, cities) in [("First", vec![1, 2]), ("Second", vec![3])] {
            let cities = CitySet::new(
                cities
                    .into_iter()
                    .map(|c| CityId::new(c).unwrap())
                    .collect(),
            )
            .unwrap();
            let m = store
                .insert_merchant(
                    &MerchantDraft {
                        name: name.into(),
                        short_name: name.into(),
                        cities,
                    },
                    t0(),
                )
                .await
                .unwrap();
            merchants.push((m.id, key(Role::Merchant, Some(m.id)).await));
        }
        let user = JwtKeys::new(SECRET)
            .mint(&UserId::parse("u-1").unwrap(), t0(), Duration::days(365))
            .unwrap();
        Some(TestApp {
            router,
            state,
            platform: key(Role::Platform, None).await,
            service: key(Role::Service, None).await,
            store,
            clock,
            merchants,
            user,
            _dir: dir,
        })
    }

    /// A restart: a fresh `AppState` and router over the same store, clock and settings, so
    /// everything a process keeps in memory (the claim engine's batchers and sold-out set,
    /// caches, rate limiters) starts empty while the database is kept. The old claim engine is
    /// shut down first, as `serve` does, so no batcher of it outlives the "process".
    pub async fn restart(&mut self) {
        self.state.claims().shutdown().await;
        let settings = self.state.settings().clone();
        self.state = AppState::new(
            coupond_app::App::new(
                self.store.clone(),
                Arc::new(self.clock.clone()),
                SECRET,
                settings,
            ),
            SECRET,
        );
        self.router = coupond_api::router(self.state.clone());
    }

    /// A second instance beside this one: its own `AppState` (caches, sold-out memo, claim
    /// batchers, limits) over the same database, clock, keys and settings, as a second
    /// `serve` process on one database with no Redis between them. Keep `self` alive: it
    /// owns the SQLite file.
    pub fn twin(&self) -> TestApp {
        let settings = self.state.settings().clone();
        let state = AppState::new(
            coupond_app::App::new(
                self.store.clone(),
                Arc::new(self.clock.clone()),
                SECRET,
                settings,
            ),
            SECRET,
        );
        TestApp {
            router: coupond_api::router(state.clone()),
            state,
            store: self.store.clone(),
            clock: self.clock.clone(),
            platform: self.platform.clone(),
            service: self.service.clone(),
            merchants: self.merchants.clone(),
            user: self.user.clone(),
            _dir: None,
        }
    }

    /// Serves the app over real TCP on a loopback port, with `limits`, until the test's runtime
    /// ends; returns the address.
    pub async fn listen(
        &self,
        limits: coupond_api::server::ConnectionLimits,
    ) -> std::net::SocketAddr {
        let listener = coupond_api::server::bind(([127, 0, 0, 1], 0).into()).unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(coupond_api::server::serve(
            listener,
            self.router.clone(),
            limits,
            std::future::pending(),
        ));
        addr
    }

    /// The SQLite database file (`None` on the server backends), for tests that read it directly.
    pub fn sqlite_path(&self) -> Option<std::path::PathBuf> {
        self._dir.as_ref().map(|d| d.path().join("coupond.db"))
    }

    pub fn m1(&self) -> &str {
        &self.merchants[0].1
    }

    pub fn m2(&self) -> &str {
        &self.merchants[1].1
    }

    /// Sends a raw request through the router.
    pub async fn send(&self, req: Request<Body>) -> Reply {
        let res = self.router.clone().oneshot(req).await.unwrap();
        let status = res.status();
        let headers = res.headers().clone();
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            body,
        }
    }

    /// A GET as `credential`, its status and its body as text (a CSV download).
    pub async fn get_text(&self, path: &str, credential: &str) -> (StatusCode, String) {
        let req = Request::builder()
            .uri(path)
            .header(header::AUTHORIZATION, format!("Bearer {credential}"))
            .body(Body::empty())
            .unwrap();
        let res = self.router.clone().oneshot(req).await.unwrap();
        let status = res.status();
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    /// A JSON request as `credential` (None: anonymous).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        credential: Option<&str>,
        body: Option<Value>,
    ) -> Reply {
        let mut req = Request::builder().method(method).uri(path);
        if let Some(c) = credential {
            req = req.header(header::AUTHORIZATION, format!("Bearer {c}"));
        }
        let req = match body {
            Some(b) => req
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(b.to_string()))
                .unwrap(),
            None => req.body(Body::empty()).unwrap(),
        };
        self.send(req).await
    }

    pub async fn get(&self, path: &str, credential: &str) -> Reply {
        self.call(Method::GET, path, Some(credential), None).await
    }

    pub async fn post(&self, path: &str, credential: &str, body: Value) -> Reply {
        self.call(Method::POST, path, Some(credential), Some(body))
            .await
    }

    pub async fn patch(&self, path: &str, credential: &str, body: Value) -> Reply {
        self.call(Method::PATCH, path, Some(credential), Some(body))
            .await
    }

    /// Creates an activity (as the platform) and returns its id.
    pub async fn activity(&self, body: Value) -> i64 {
        let r = self.post("/v1/activities", &self.platform, body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        r.body["id"].as_i64().unwrap()
    }

    /// Counts templates and activities in the database, to show that a refused request wrote
    /// nothing.
    pub async fn row_counts(&self) -> (usize, usize) {
        let now = self.clock.now_ts();
        let page = coupond_store::Page {
            after: None,
            limit: 10_000,
        };
        let a = self
            .store
            .list_activities(&coupond_store::ActivityQuery {
                narrow: Default::default(),
                status: None,
                city: None,
                any_city: None,
                now,
                freeze: Duration::minutes(5),
                page,
            })
            .await
            .unwrap()
            .len();
        let t = self
            .store
            .list_templates(&coupond_store::TemplateQuery {
                city: None,
                narrow: Default::default(),
                merchant: None,
                activity: None,
                status: None,
                now,
                page,
            })
            .await
            .unwrap()
            .len();
        (a, t)
    }
}

/// `ManualClock::now` without importing the trait at every call site.
pub trait NowTs {
    fn now_ts(&self) -> Timestamp;
}

impl NowTs for ManualClock {
    fn now_ts(&self) -> Timestamp {
        coupond_engine::Clock::now(self)
    }
}

/// An activity in cities 1 and 2, amount_off 100..=5000, enrolling hours [e0, e1) and running
/// [r0, r1) after day zero.
pub fn activity_body(e0: i64, e1: i64, r0: i64, r1: i64) -> Value {
    json!({
        "title": "Spring festival",
        "cities": [1, 2],
        "kind": "amount_off",
        "value_min": 100,
        "value_max": 5000,
        "enrollment": {"start": at(e0), "end": at(e1)},
        "run": {"start": at(r0), "end": at(r1)},
        "funded_by": "platform"
    })
}

/// A template for `activity` worth `amount` off in city 1.
pub fn activity_template(activity: i64, amount: i64) -> Value {
    json!({
        "activity_id": activity,
        "title": "20 off",
        "value": {"kind": "amount_off", "amount": amount},
        "cities": [1],
        "total_stock": 100,
        "validity": {"type": "relative", "days": 7}
    })
}

/// The fields a refusal names (its `errors`), in order.
pub fn fields(body: &Value) -> Vec<&str> {
    body["errors"]
        .as_array()
        .map(|e| e.iter().filter_map(|e| e["field"].as_str()).collect())
        .unwrap_or_default()
}

/// A standalone template claimable hours [c0, c1).
pub fn standalone_template(c0: i64, c1: i64) -> Value {
    json!({
        "title": "10% off, at most 50",
        "value": {"kind": "percent_off", "bps": 1000, "cap": 5000},
        "threshold": 10000,
        "cities": [1],
        "total_stock": 10,
        "per_user_limit": 2,
        "stacking": "stackable",
        "claim_window": {"start": at(c0), "end": at(c1)},
        "validity": {"type": "fixed", "from": at(c0), "until": at(c1 + 24)}
    })
}
