//! The shared rate limits when Redis cannot be reached: claims fall back to this process's
//! limiter (`open`, the default) and still meet a limit; code redemptions refuse with 503
//! `rate_limit_unavailable` (`closed`, the default) and change nothing.

use async_trait::async_trait;
use coupond_engine::shared::{LimitAsk, LimitsUnavailable, SharedLimits};

use super::*;

/// A Redis that never answers.
#[derive(Debug)]
struct Down;

#[async_trait]
impl SharedLimits for Down {
    async fn check(
        &self,
        _: &[LimitAsk<'_>],
    ) -> Result<Option<(usize, StdDuration)>, LimitsUnavailable> {
        Err(LimitsUnavailable("connection refused".into()))
    }
}

#[tokio::test]
async fn claims_fall_back_to_the_local_limit_and_redemptions_fail_closed() {
    let settings = AppSettings {
        shared_limits: Some(Arc::new(Down)),
        ..serve_limits()
    };
    let per_user = settings.claim_rate_per_user;
    let app = TestApp::with_settings(Backend::Sqlite, settings)
        .await
        .unwrap();
    let user = token(&app, "u-1");
    let started = Instant::now();
    let (mut admitted, mut limited) = (0, 0);
    for _ in 0..40 {
        let path = "/v1/templates/999999/claims";
        let r = app
            .send(request(Method::POST, path, &user, Some(address(1)), None))
            .await;
        match r.status {
            StatusCode::NOT_FOUND => admitted += 1,
            StatusCode::TOO_MANY_REQUESTS => limited += 1,
            other => panic!("a claim answered {other}: {}", r.body),
        }
    }
    let bound = admitted_at_most(per_user, started.elapsed());
    assert!(
        admitted >= per_user.burst as usize && admitted <= bound && limited > 0,
        "{admitted} admitted, {limited} limited (local limit: at most {bound})"
    );

    let before = dump(&app).await;
    let path = "/v1/codes/NOSUCHCODE/redeem";
    let r = app
        .send(request(Method::POST, path, &user, Some(address(2)), None))
        .await;
    assert_problem(
        &r,
        StatusCode::SERVICE_UNAVAILABLE,
        "rate_limit_unavailable",
        None,
        "a redemption while Redis is down",
    );
    assert_eq!(r.headers[header::RETRY_AFTER], "1");
    assert_unchanged(&before, &dump(&app).await, "a refused redemption");
}
