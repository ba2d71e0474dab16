//! Listing search over 1,000,000 listings with 100,000 of them bound to live templates
//! (DESIGN §7: "listing search over a million listings in milliseconds").
//!
//! Each measured call is what `GET /v1/listings` does: one page of 50 matching listings, then
//! the live coupons of that page. The data: 100 cities x 20 categories, 100 merchants, 1,000
//! templates (amount_off and percent_off; 900 active at the instant searched, 100 ended);
//! every tenth listing bound to one template, every hundredth to a second.
//!
//! `cargo bench -p coupond-store-sqlite --bench search` (seeding takes about a minute; the
//! seeded file is kept in `target/bench-data/` and reused while its shape is unchanged).

use std::hint::black_box;
use std::str::FromStr;
use std::sync::Arc;

use coupond_domain::{CategoryId, CityId, CouponKind, CouponValue, ListingId, Money, TemplateId};
use coupond_store::testing::fixtures::{at, merchant, spec, standalone_template, t0};
use coupond_store::{ListingQuery, NewTemplate, Page, Store};
use coupond_store_sqlite::SqliteDb;
use criterion::{criterion_group, criterion_main, Criterion};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{QueryBuilder, Sqlite};

const LISTINGS: i64 = 1_000_000;
const CITIES: i64 = 100;
const CATEGORIES: i64 = 20;
const MERCHANTS: i64 = 100;
const TEMPLATES: i64 = 1_000;
/// Bumped whenever the seeded shape changes, so a stale file is not reused.
const SHAPE: u32 = 3;

/// A well-mixed number from `id` (Fibonacci hashing), so cities, categories and bindings are
/// independent of each other.
fn spread(id: i64, shift: u32) -> i64 {
    ((id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as i64 & 0xFFFF_FFFF
}

async fn seed(path: &std::path::Path) -> Arc<dyn Store> {
    let url = format!("sqlite://{}", path.display());
    let store = SqliteDb::connect(&url).await.unwrap();
    store.migrate().await.unwrap();
    let store: Arc<dyn Store> = Arc::new(store);
    let mut merchants = vec![];
    for m in 0..MERCHANTS {
        let cities: Vec<i64> = (1..=CITIES).collect();
        merchants.push(
            store
                .insert_merchant(&merchant(&format!("M{m}"), &cities), t0())
                .await
                .unwrap(),
        );
    }
    // Templates claimable hours [10, 20) (ended: [1, 5)); searched at hour 15.
    let mut templates = vec![];
    for i in 0..TEMPLATES {
        let m = &merchants[(i % MERCHANTS) as usize];
        let mut d = if i % 10 == 9 {
            standalone_template(1, 5)
        } else {
            standalone_template(10, 20)
        };
        d.cities = coupond_store::testing::fixtures::cities(&(1..=CITIES).collect::<Vec<_>>());
        if i % 2 == 1 {
            d.value = CouponValue::PercentOff {
                bps: coupond_domain::BasisPoints::new(1000).unwrap(),
                cap: Some(Money::new(5000).unwrap()),
            };
        }
        let s = spec(d, m, None, t0());
        let t = store
            .insert_template(
                &NewTemplate {
                    merchant_id: Some(m.id),
                    spec: &s,
                    activity_version: None,
                    review: Default::default(),
                },
                t0(),
            )
            .await
            .unwrap();
        templates.push(
            store
                .publish_template(t.id, t.version, t0())
                .await
                .unwrap()
                .id,
        );
    }
    // Listings and bindings in bulk, straight into the file (the store writes one at a time).
    let opts = SqliteConnectOptions::from_str(&url)
        .unwrap()
        .synchronous(SqliteSynchronous::Off);
    let raw = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(opts)
        .await
        .unwrap();
    let mut tx = raw.begin().await.unwrap();
    let ids: Vec<i64> = (1..=LISTINGS).collect();
    for chunk in ids.chunks(2_000) {
        let mut b = QueryBuilder::<Sqlite>::new(
            "INSERT INTO listings (id, merchant_id, city_id, category_id, title, price, deposit, \
             created_at, updated_at, bound) ",
        );
        b.push_values(chunk, |mut r, &id| {
            let bound = i64::from(id % 10 == 0) + i64::from(id % 100 == 0);
            r.push_bind(id)
                .push_bind(merchants[(id % MERCHANTS) as usize].id.get())
                .push_bind(1 + spread(id, 20) % CITIES)
                .push_bind(1 + spread(id, 40) % CATEGORIES)
                .push_bind("Room")
                .push_bind(300_000)
                .push_bind(600_000)
                .push_bind(0)
                .push_bind(0)
                .push_bind(bound);
        });
        b.build().execute(&mut *tx).await.unwrap();
    }
    let mut pairs = vec![];
    for id in (10..=LISTINGS).step_by(10) {
        pairs.push((id, templates[(id / 10 % TEMPLATES) as usize].get()));
        if id % 100 == 0 {
            pairs.push((id, templates[((id / 10 + 1) % TEMPLATES) as usize].get()));
        }
    }
    for chunk in pairs.chunks(8_000) {
        let mut b = QueryBuilder::<Sqlite>::new(
            "INSERT INTO bindings (listing_id, template_id, bound_at) ",
        );
        b.push_values(chunk, |mut r, (l, t)| {
            r.push_bind(*l).push_bind(*t).push_bind(0);
        });
        b.build().execute(&mut *tx).await.unwrap();
    }
    tx.commit().await.unwrap();
    sqlx::query("ANALYZE").execute(&raw).await.unwrap();
    raw.close().await;
    store
}

async fn open_or_seed() -> Arc<dyn Store> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-data");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("search-{LISTINGS}-v{SHAPE}.db"));
    if path.exists() {
        let store = SqliteDb::connect(&format!("sqlite://{}", path.display()))
            .await
            .unwrap();
        store.migrate().await.unwrap();
        return Arc::new(store);
    }
    let partial = path.with_extension("partial");
    let _ = std::fs::remove_file(&partial);
    let started = std::time::Instant::now();
    let store = seed(&partial).await;
    store.close().await;
    for ext in ["partial-wal", "partial-shm"] {
        let _ = std::fs::remove_file(path.with_extension(ext));
    }
    std::fs::rename(&partial, &path).unwrap();
    eprintln!("seeded {} in {:.1?}", path.display(), started.elapsed());
    let store = SqliteDb::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    Arc::new(store)
}

fn query() -> ListingQuery {
    ListingQuery {
        merchant: None,
        external_id: None,
        city: None,
        category: None,
        kind: None,
        activity: None,
        activity_type: None,
        template: None,
        has_coupon: None,
        now: at(15),
        page: Page {
            after: None,
            limit: 50,
        },
    }
}

/// One search as the API runs it: the page, then the page's live coupons.
async fn search(store: &dyn Store, q: &ListingQuery) -> usize {
    let page = store.list_listings(q).await.unwrap();
    let ids: Vec<ListingId> = page.iter().map(|l| l.id).collect();
    let live = store.live_templates(&ids, q.now).await.unwrap();
    page.len() + live.len()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let store = rt.block_on(open_or_seed());
    let city = CityId::new(7).ok();
    let cases: Vec<(&str, ListingQuery)> = vec![
        ("city", ListingQuery { city, ..query() }),
        (
            "city+category",
            ListingQuery {
                city,
                category: CategoryId::new(3).ok(),
                ..query()
            },
        ),
        (
            "city+has_coupon",
            ListingQuery {
                city,
                has_coupon: Some(true),
                ..query()
            },
        ),
        (
            "has_coupon",
            ListingQuery {
                has_coupon: Some(true),
                ..query()
            },
        ),
        (
            "city+kind",
            ListingQuery {
                city,
                kind: Some(CouponKind::PercentOff),
                ..query()
            },
        ),
        (
            "template",
            ListingQuery {
                template: TemplateId::new(42).ok(),
                ..query()
            },
        ),
        (
            "city+no_coupon",
            ListingQuery {
                city,
                has_coupon: Some(false),
                ..query()
            },
        ),
        (
            "has_coupon, page 100",
            ListingQuery {
                has_coupon: Some(true),
                page: Page {
                    after: Some(500_000),
                    limit: 50,
                },
                ..query()
            },
        ),
    ];
    let mut group = c.benchmark_group("search 1M listings");
    for (name, q) in &cases {
        let found = rt.block_on(search(store.as_ref(), q));
        assert!(found > 0, "{name} finds something");
        group.bench_function(*name, |b| {
            b.iter(|| rt.block_on(search(store.as_ref(), black_box(q))))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench
}
criterion_main!(benches);
