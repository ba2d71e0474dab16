//! What each layer of the HTTP stack costs a request: `GET /healthz` through a router with no
//! layer, then with the layers of `coupond_api::layers::STACK` added one at a time, in
//! process (no socket), the answer's body read to the end. The difference between two
//! neighbours is the cost of the layer added. Run: `cargo bench --bench layers`.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use axum::routing::get;
use axum::Router;
use coupond_api::layers::STACK;
use coupond_api::AppSettings;
use criterion::{criterion_group, criterion_main, Criterion};
use http_body_util::BodyExt;
use tower::ServiceExt;

/// `/healthz` behind the first `n` layers of the stack.
fn service(n: usize, settings: &AppSettings) -> Router {
    let bare = Router::new().route("/healthz", get(coupond_api::routes::system::healthz));
    STACK[..n]
        .iter()
        .fold(bare, |router, (_, layer)| layer(router, settings))
}

/// `iters` requests one after another; the time they took.
async fn run(app: &Router, iters: u64) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        let req = Request::get("/healthz").body(Body::empty()).unwrap();
        let res = app.clone().oneshot(req).await.unwrap();
        assert!(res.status().is_success());
        let body = res.into_body().collect().await.unwrap().to_bytes();
        assert!(!body.is_empty());
    }
    start.elapsed()
}

fn layers(c: &mut Criterion) {
    coupond_api::observe::metrics_handle();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let settings = AppSettings::default();
    let mut group = c.benchmark_group("healthz");
    for n in 0..=STACK.len() {
        let name = match n {
            0 => "no layer".to_owned(),
            n => format!("+ {}", STACK[n - 1].0),
        };
        let app = service(n, &settings);
        group.bench_function(name, |b| {
            b.iter_custom(|iters| rt.block_on(run(&app, iters)))
        });
    }
    group.finish();
}

criterion_group!(benches, layers);
criterion_main!(benches);
