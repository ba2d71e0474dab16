//! Items 10, 11 and 13: listings only in served cities; token times checked; the bearer scheme
//! in any case; empty claim bodies with a content type; titles that show something; one 401
//! for unknown and revoked keys; `/docs` from the binary. And from a later probe of the
//! headers: every answer, whatever produced it, says `X-Content-Type-Options: nosniff`.

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use serde_json::json;

use crate::claims::live;
use crate::support::*;

#[tokio::test]
async fn listings_go_only_where_their_merchant_serves() {
    let app = TestApp::new().await;
    for city in [3_i64, i64::MAX] {
        let r = app
            .post(
                "/v1/listings",
                app.m1(),
                json!({"city_id": city, "category_id": 1, "title": "Far away", "price": 1}),
            )
            .await;
        assert_eq!(
            (r.status, r.code(), r.body["field"].as_str()),
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                "city_not_served",
                Some("city_id")
            ),
            "{}",
            r.body
        );
    }
    let ok = app
        .post(
            "/v1/listings",
            app.m1(),
            json!({"city_id": 2, "category_id": 1, "title": "Near", "price": 1}),
        )
        .await;
    assert_eq!(ok.status, StatusCode::CREATED);
    let id = ok.body["id"].as_i64().unwrap();
    let r = app
        .patch(
            &format!("/v1/listings/{id}"),
            app.m1(),
            json!({"city_id": 3}),
        )
        .await;
    assert_eq!(r.code(), "city_not_served");
    // Users searching city 3 find nothing of merchant 1.
    let found = app.get("/v1/listings?city=3", &app.user).await;
    assert_eq!(found.body["items"], json!([]));
}

fn signed(claims: serde_json::Value) -> String {
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(SECRET),
    )
    .unwrap()
}

#[tokio::test]
async fn tokens_from_the_future_or_living_for_ever_are_refused() {
    let app = TestApp::new().await;
    let now = t0().unix_micros() / 1_000_000;
    for claims in [
        json!({"sub": "u-7", "exp": now + 3600, "nbf": now + 86_400}),
        json!({"sub": "u-7", "exp": now + 3600, "iat": now + 3_000}),
        json!({"sub": "u-7", "exp": 1_i64 << 62}),
    ] {
        let r = app.get("/v1/me/coupons", &signed(claims.clone())).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{claims}");
    }
    let fine = signed(json!({"sub": "u-7", "exp": now + 3600, "iat": now}));
    assert_eq!(
        app.get("/v1/me/coupons", &fine).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn the_bearer_scheme_is_read_in_any_case() {
    let app = TestApp::new().await;
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        let req = Request::builder()
            .uri("/v1/activities")
            .header(header::AUTHORIZATION, format!("{scheme} {}", app.platform))
            .body(Body::empty())
            .unwrap();
        assert_eq!(app.send(req).await.status, StatusCode::OK, "{scheme}");
    }
}

#[tokio::test]
async fn an_empty_claim_body_is_accepted_whatever_its_content_type() {
    let app = TestApp::new().await;
    let t = live(&app, 10, 5, json!({})).await;
    for content_type in [
        "application/json",
        "text/plain",
        "application/x-www-form-urlencoded",
    ] {
        let req = Request::builder()
            .method(Method::POST)
            .uri(format!("/v1/templates/{t}/claims"))
            .header(header::AUTHORIZATION, format!("Bearer {}", app.user))
            .header(header::CONTENT_TYPE, content_type)
            .body(Body::empty())
            .unwrap();
        let r = app.send(req).await;
        assert_eq!(r.status, StatusCode::CREATED, "{content_type}: {}", r.body);
    }
    // A body that is there is still read as JSON only.
    let req = Request::builder()
        .method(Method::POST)
        .uri(format!("/v1/templates/{t}/claims"))
        .header(header::AUTHORIZATION, format!("Bearer {}", app.user))
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Body::from("hello"))
        .unwrap();
    assert_eq!(
        app.send(req).await.status,
        StatusCode::UNSUPPORTED_MEDIA_TYPE
    );
}

#[tokio::test]
async fn titles_must_show_something_and_not_reorder_text() {
    let app = TestApp::new().await;
    for title in [
        "\u{200B}\u{200B}\u{200B}",
        "\u{3164}",
        "Flat \u{202E}tnuocsid",
    ] {
        let mut body = standalone_template(10, 20);
        body["title"] = json!(title);
        let r = app.post("/v1/templates", app.m1(), body).await;
        assert_eq!(
            (r.status, r.code(), r.body["field"].as_str()),
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_characters",
                Some("title")
            ),
            "{title:?}"
        );
        let r = app
            .post(
                "/v1/listings",
                app.m1(),
                json!({"city_id": 1, "category_id": 1, "title": title, "price": 1}),
            )
            .await;
        assert_eq!(r.code(), "invalid_characters", "{title:?}");
    }
}

#[tokio::test]
async fn unknown_and_revoked_keys_get_the_same_answer() {
    let app = TestApp::new().await;
    let key = app.store.list_api_keys().await.unwrap()[0].clone();
    let revoked = match key.role {
        coupond_store::Role::Platform => app.platform.clone(),
        coupond_store::Role::Service => app.service.clone(),
        coupond_store::Role::Merchant => app.m1().to_owned(),
    };
    app.store.revoke_api_key(key.id, t0()).await.unwrap();
    let a = app.get("/v1/listings", &revoked).await;
    let b = app
        .get("/v1/listings", "cpd_thisKeyDoesNotExistAnywhere")
        .await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        (a.status, a.code(), &a.body["detail"]),
        (b.status, b.code(), &b.body["detail"])
    );
}

#[tokio::test]
async fn the_api_reference_page_needs_no_internet() {
    let app = TestApp::new().await;
    let req = Request::builder().uri("/docs").body(Body::empty()).unwrap();
    let res = tower::ServiceExt::oneshot(app.router.clone(), req)
        .await
        .unwrap();
    // The browser is told to load nothing from elsewhere.
    let policy = res.headers()[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap();
    assert!(
        policy.contains("default-src 'none'") && !policy.contains("http"),
        "{policy}"
    );
    let html = http_body_util::BodyExt::collect(res.into_body())
        .await
        .unwrap()
        .to_bytes();
    let html = String::from_utf8(html.to_vec()).unwrap();
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "{html}"
    );
    let src = html
        .split("<script src=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap();
    let req = Request::builder().uri(src).body(Body::empty()).unwrap();
    let res = tower::ServiceExt::oneshot(app.router.clone(), req)
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers()[header::CACHE_CONTROL]
        .to_str()
        .unwrap()
        .contains("immutable"));
    let js = http_body_util::BodyExt::collect(res.into_body())
        .await
        .unwrap()
        .to_bytes();
    assert!(js.len() > 500_000, "the whole Redoc bundle");
    let js = String::from_utf8_lossy(&js);
    assert!(
        !js.contains("cdn.redoc.ly"),
        "the bundle fetches its footer's logo from Redocly's CDN"
    );
}

/// A route, a guard, a refused query or body, the fallbacks and the system routes: no browser
/// takes JSON, CSV or a problem naming user input for a script or a page.
#[tokio::test]
async fn every_answer_says_nosniff() {
    let app = TestApp::new().await;
    let answers = [
        app.get("/v1/activities", &app.platform).await,
        app.get("/v1/activities", "cpd_nobody").await,
        app.get("/v1/activities?limit=0", &app.platform).await,
        app.post("/v1/listings", app.m1(), json!({"nope": 1})).await,
        app.call(Method::GET, "/v1/nowhere", None, None).await,
        app.call(Method::PUT, "/healthz", None, None).await,
        app.call(Method::GET, "/healthz", None, None).await,
        app.call(Method::GET, "/metrics", None, None).await,
        app.call(Method::GET, "/openapi.json", None, None).await,
        app.call(Method::GET, "/docs", None, None).await,
    ];
    let statuses: Vec<StatusCode> = answers.iter().map(|r| r.status).collect();
    for expected in [
        StatusCode::OK,
        StatusCode::UNAUTHORIZED,
        StatusCode::BAD_REQUEST,
        StatusCode::NOT_FOUND,
        StatusCode::METHOD_NOT_ALLOWED,
    ] {
        assert!(statuses.contains(&expected), "{expected}: {statuses:?}");
    }
    for r in answers {
        assert_eq!(
            r.headers
                .get(header::X_CONTENT_TYPE_OPTIONS)
                .map(|v| v.to_str().unwrap()),
            Some("nosniff"),
            "{} {}",
            r.status,
            r.body
        );
    }
}

/// The root leads a browser to the console and anything else to the API's doors; `/docs/`
/// is `/docs`.
#[tokio::test]
async fn the_root_leads_somewhere() {
    let app = TestApp::new().await;
    let browse = Request::builder()
        .uri("/")
        .header(header::ACCEPT, "text/html,application/xhtml+xml")
        .body(Body::empty())
        .unwrap();
    let res = tower::ServiceExt::oneshot(app.router.clone(), browse)
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(res.headers()[header::LOCATION], "/console");
    let r = app.call(Method::GET, "/", None, None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        (r.body["api"].as_str(), r.body["docs"].as_str()),
        (Some("/v1"), Some("/docs"))
    );
    let req = Request::builder()
        .uri("/docs/")
        .body(Body::empty())
        .unwrap();
    let res = tower::ServiceExt::oneshot(app.router.clone(), req)
        .await
        .unwrap();
    assert!(res.status().is_redirection());
    assert_eq!(res.headers()[header::LOCATION], "/docs");
}
