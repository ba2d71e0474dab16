//! A world in which every JSON write route has a request that succeeds, for the body abuse
//! tests (`bodies`).

use super::*;

/// A request that would succeed: its path, credential and body.
pub(super) struct Fixture {
    pub(super) path: String,
    pub(super) credential: String,
    pub(super) body: Value,
}

/// A world in which every JSON write route has a request that succeeds.
pub(super) async fn fixtures(app: &TestApp) -> BTreeMap<(Method, String), Fixture> {
    let activity = app.activity(activity_body(-1, 24, 48, 96)).await;
    let draft = app
        .post("/v1/templates", app.m1(), standalone_template(10, 20))
        .await
        .body["id"]
        .as_i64()
        .unwrap();
    let listing = app
        .post(
            "/v1/listings",
            app.m1(),
            json!({"city_id": 1, "category_id": 1, "title": "Loft", "price": 100000}),
        )
        .await
        .body["id"]
        .as_i64()
        .unwrap();
    let mut approving = activity_body(-1, 24, 48, 96);
    approving["approval"] = json!("required");
    let approving = app.activity(approving).await;
    let pending = app
        .post("/v1/templates", app.m1(), activity_template(approving, 500))
        .await
        .body["id"]
        .as_i64()
        .unwrap();
    let claimable = live(app, 100, 5, json!({})).await;
    let pausable = live(app, 100, 5, json!({})).await;
    let coded = live(app, 100, 5, json!({})).await;
    let r = app
        .call(
            Method::PUT,
            &format!("/v1/templates/{coded}/code"),
            Some(app.m1()),
            Some(json!({"code": "MASSCODE"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let lockable = worth(app, 20000, "stackable").await;
    let coupon = claim(app, lockable, "u-1").await;
    let revocable = claim(app, claimable, "u-2").await;
    let refundable = claim(app, lockable, "u-3").await;
    let held = claim(app, lockable, "u-4").await;
    let r = lock(app, "held-1", "u-4", &[held]).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    // Past the 15-minute lock, within the coupon's validity (a lock never outlives it).
    let hold_until = coupond_engine::Clock::now(&app.clock)
        .plus(time::Duration::hours(2))
        .to_string();
    let r = lock(app, "paid-1", "u-3", &[refundable]).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = app
        .post("/v1/orders/paid-1/confirm", &app.service, json!({}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let operator = app
        .post(
            "/v1/operators",
            &app.platform,
            json!({"email": "sam@example.com", "name": "Sam", "role": "support"}),
        )
        .await
        .body["id"]
        .as_i64()
        .unwrap();
    let (platform, m1, service) = (
        app.platform.clone(),
        app.m1().to_owned(),
        app.service.clone(),
    );
    let f = |path: String, credential: &str, body: Value| Fixture {
        path,
        credential: credential.to_owned(),
        body,
    };
    let mut all = BTreeMap::new();
    let mut add = |method: Method, route: &str, fixture: Fixture| {
        all.insert((method, route.to_owned()), fixture);
    };
    add(
        Method::POST,
        "/v1/merchants",
        f(
            "/v1/merchants".into(),
            &platform,
            json!({"name": "Harbour Homes", "short_name": "Harbour", "cities": [1]}),
        ),
    );
    add(
        Method::PUT,
        "/v1/cities/{id}",
        f("/v1/cities/1".into(), &platform, json!({"name": "Lisbon"})),
    );
    add(
        Method::PATCH,
        "/v1/merchants/{id}",
        f(
            format!("/v1/merchants/{}", app.merchants[0].0),
            &platform,
            json!({"short_name": "Firstly"}),
        ),
    );
    add(
        Method::POST,
        "/v1/merchants/{id}/keys",
        f(
            format!("/v1/merchants/{}/keys", app.merchants[0].0),
            &platform,
            json!({"label": "till 2"}),
        ),
    );
    let m = app.merchants[0].0;
    let key = app
        .store
        .list_api_keys()
        .await
        .unwrap()
        .into_iter()
        .find(|k| k.merchant_id == Some(m))
        .unwrap()
        .id;
    add(
        Method::PUT,
        "/v1/merchants/{id}/keys/{key_id}/owner",
        f(
            format!("/v1/merchants/{m}/keys/{key}/owner"),
            &platform,
            json!({ "operator_id": null }),
        ),
    );
    add(
        Method::POST,
        "/v1/operators",
        f(
            "/v1/operators".into(),
            &platform,
            json!({"email": "kim@example.com", "name": "Kim", "role": "owner", "merchant_id": app.merchants[0].0}),
        ),
    );
    add(
        Method::PATCH,
        "/v1/operators/{id}",
        f(
            format!("/v1/operators/{operator}"),
            &platform,
            json!({"name": "Sam Jones"}),
        ),
    );
    add(
        Method::POST,
        "/v1/activities",
        f(
            "/v1/activities".into(),
            &platform,
            activity_body(-1, 24, 48, 96),
        ),
    );
    add(
        Method::PATCH,
        "/v1/activities/{id}",
        f(
            format!("/v1/activities/{activity}"),
            &platform,
            json!({"title": "Renamed"}),
        ),
    );
    add(
        Method::POST,
        "/v1/templates",
        f("/v1/templates".into(), &m1, standalone_template(10, 20)),
    );
    add(
        Method::PATCH,
        "/v1/templates/{id}",
        f(
            format!("/v1/templates/{draft}"),
            &m1,
            json!({"title": "Renamed", "total_stock": 20}),
        ),
    );
    add(
        Method::POST,
        "/v1/listings",
        f(
            "/v1/listings".into(),
            &m1,
            json!({"city_id": 1, "category_id": 1, "title": "Studio", "price": 90000}),
        ),
    );
    add(
        Method::PATCH,
        "/v1/listings/{id}",
        f(
            format!("/v1/listings/{listing}"),
            &m1,
            json!({"price": 95000}),
        ),
    );
    add(
        Method::POST,
        "/v1/templates/{id}/claims",
        f(
            format!("/v1/templates/{claimable}/claims"),
            &service,
            json!({"user_id": "u-7"}),
        ),
    );
    add(
        Method::POST,
        "/v1/codes/{code}/redeem",
        f(
            "/v1/codes/MASSCODE/redeem".into(),
            &service,
            json!({"user_id": "u-8"}),
        ),
    );
    add(
        Method::PUT,
        "/v1/templates/{id}/code",
        f(
            format!("/v1/templates/{claimable}/code"),
            &m1,
            json!({"code": "NEWCODE"}),
        ),
    );
    add(
        Method::POST,
        "/v1/templates/{id}/codes",
        f(
            format!("/v1/templates/{claimable}/codes"),
            &m1,
            json!({"count": 3}),
        ),
    );
    add(
        Method::POST,
        "/v1/templates/{id}/issuances",
        f(
            format!("/v1/templates/{claimable}/issuances"),
            &m1,
            json!({"user_ids": ["u-9"]}),
        ),
    );
    add(
        Method::POST,
        "/v1/quotes",
        f(
            "/v1/quotes".into(),
            &service,
            json!({"order": order(app, "u-1")}),
        ),
    );
    add(
        Method::POST,
        "/v1/rules/preview",
        f(
            "/v1/rules/preview".into(),
            &m1,
            json!({"order": order(app, "u-1"),
                   "conditions": {"fact": "order.quantity", "op": "gte", "value": 1}}),
        ),
    );
    let rule = json!({"name": "Two or more",
                      "conditions": {"fact": "order.quantity", "op": "gte", "value": 2}});
    add(
        Method::POST,
        "/v1/rules",
        f("/v1/rules".into(), &m1, rule.clone()),
    );
    let made = app.post("/v1/rules", &m1, rule.clone()).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    add(
        Method::PUT,
        "/v1/rules/{id}",
        f(format!("/v1/rules/{}", made.body["id"]), &m1, rule),
    );
    add(
        Method::POST,
        "/v1/orders/{order_id}/lock",
        f(
            "/v1/orders/mass-1/lock".into(),
            &service,
            json!({"order": order(app, "u-1"), "coupon_ids": [coupon]}),
        ),
    );
    add(
        Method::POST,
        "/v1/orders/{order_id}/record",
        f(
            "/v1/orders/plain-1/record".into(),
            &service,
            json!({ "order": order(app, "u-1") }),
        ),
    );
    add(
        Method::POST,
        "/v1/orders/{order_id}/extend",
        f(
            "/v1/orders/held-1/extend".into(),
            &service,
            json!({ "hold_until": hold_until }),
        ),
    );
    add(
        Method::PUT,
        "/v1/users/{id}/tags",
        f(
            "/v1/users/u-5/tags".into(),
            &platform,
            json!({"tags": ["vip"]}),
        ),
    );
    add(
        Method::PUT,
        "/v1/users/{id}/contact",
        f(
            "/v1/users/u-5/contact".into(),
            &service,
            json!({"email": "u5@example.com", "phone": "+8613800138000", "locale": "zh-Hans", "time_zone": "Asia/Shanghai"}),
        ),
    );
    add(
        Method::PUT,
        "/v1/users/{id}/preferences",
        f(
            "/v1/users/u-5/preferences".into(),
            &service,
            json!({"email": {"campaign": false}}),
        ),
    );
    let user = app.user.clone();
    add(
        Method::PUT,
        "/v1/me/preferences",
        f(
            "/v1/me/preferences".into(),
            &user,
            json!({"sms": {"coupon_expiring": false}}),
        ),
    );
    add(
        Method::PUT,
        "/v1/message-texts/{kind}/{locale}",
        f(
            "/v1/message-texts/coupon_claimed/en".into(),
            &platform,
            json!({"subject": "Yours: {{title}}", "body": "You claimed {{title}}.", "sms": "Claimed {{title}}"}),
        ),
    );
    add(
        Method::POST,
        "/v1/message-texts/{kind}/{locale}/preview",
        f(
            "/v1/message-texts/coupon_claimed/zh-Hans/preview".into(),
            &platform,
            json!({"subject": "领取成功：{{title}}", "body": "您已领取{{title}}。", "sms": "已领取{{title}}"}),
        ),
    );
    add(
        Method::POST,
        "/v1/templates/{id}/messages",
        f(
            format!("/v1/templates/{claimable}/messages"),
            // The platform: it may name any tag in a segment.
            &platform,
            json!({"title": "Spring sale", "message": "Ends Sunday.", "segment": {"any": ["vip"], "active_within_days": 30}}),
        ),
    );
    add(
        Method::POST,
        "/v1/users/{id}/seen",
        f("/v1/users/u-5/seen".into(), &service, json!({"at": at(0)})),
    );
    add(
        Method::POST,
        "/v1/coupons/{id}/revoke",
        f(
            format!("/v1/coupons/{revocable}/revoke"),
            &m1,
            json!({"reason": "issued by mistake"}),
        ),
    );
    add(
        Method::POST,
        "/v1/templates/{id}/reject",
        f(
            format!("/v1/templates/{pending}/reject"),
            &platform,
            json!({"reason": "too little stock"}),
        ),
    );
    add(
        Method::POST,
        "/v1/orders/{order_id}/refund",
        f(
            "/v1/orders/paid-1/refund".into(),
            &service,
            json!({"reason": "returned"}),
        ),
    );
    add(
        Method::POST,
        "/v1/templates/{id}/pause",
        f(
            format!("/v1/templates/{pausable}/pause"),
            &m1,
            json!({"reason": "stock recount"}),
        ),
    );
    add(
        Method::POST,
        "/v1/activities/{id}/pause",
        f(
            format!("/v1/activities/{activity}/pause"),
            &platform,
            json!({"reason": "audit"}),
        ),
    );
    add(
        Method::POST,
        "/v1/webhooks",
        f(
            "/v1/webhooks".into(),
            &m1,
            json!({"url": "http://93.184.216.34/hook", "event_types": ["coupon.claimed"]}),
        ),
    );
    all
}
