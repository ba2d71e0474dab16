//! The figures on a template's page and on the reconciliation agree, and say where a refund
//! changed them: the cards give the uses and the discount before and after refunds, the
//! chart's legend the uses in its range with those refunded since, and the reconciliation
//! sets the discount refunded (money) beside the discount given, the refunds counted apart.
//! The chart has a slot for every hour (or day) of the range chosen, with ticks on its axes.

mod support;

use axum::http::{Method, StatusCode};
use coupond_api::AppSettings;
use coupond_store::Role;
use serde_json::json;

use support::{
    answer, app_with_settings, element, key, merchant, page_get, published, sign_in_cookie,
    template_body, v1, App,
};

/// A template of the merchant whose key is `mkey`, claimed by u-1 and u-2 at 14:00, both
/// coupons used on orders of 500.00 (10 % off, capped at 50.00: 50.00 each), u-1's order
/// refunded. Its id.
async fn used_and_refunded(app: &App, mkey: &str, merchant: i64) -> i64 {
    let (service, _) = key(app, Role::Service, None).await;
    let t = published(
        app,
        mkey,
        template_body("Spring", 10, "2026-12-31T00:00:00Z"),
    )
    .await;
    app.clock.advance(time::Duration::hours(2));
    for user in ["u-1", "u-2"] {
        let claim = format!("/v1/templates/{t}/claims");
        let (status, c) = v1(
            app,
            &service,
            Method::POST,
            &claim,
            json!({"user_id": user}),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{c}");
        let order = json!({
            "user_id": user, "city_id": 1,
            "lines": [{"product_id": "p-1", "merchant_id": merchant, "category_id": 1,
                       "unit_price": 50_000, "quantity": 1, "kind": "item"}]
        });
        let lock = format!("/v1/orders/o-{user}/lock");
        let body = json!({"order": order, "coupon_ids": [c["id"]]});
        let (status, r) = v1(app, &service, Method::POST, &lock, body).await;
        assert_eq!(status, StatusCode::OK, "{r}");
        let confirm = format!("/v1/orders/o-{user}/confirm");
        let (status, r) = v1(app, &service, Method::POST, &confirm, json!({})).await;
        assert_eq!(status, StatusCode::OK, "{r}");
    }
    let refund = "/v1/orders/o-u-1/refund";
    let (status, r) = v1(
        app,
        &service,
        Method::POST,
        refund,
        json!({"reason": "returned"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{r}");
    t
}

#[tokio::test]
async fn a_refund_is_said_where_it_changes_a_figure() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let t = used_and_refunded(&app, &mkey, m.get()).await;
    let cookie = sign_in_cookie(&app, &mkey).await;
    let page = answer(&app, page_get(&format!("/console/templates/{t}"), &cookie)).await;
    assert_eq!(page.status, StatusCode::OK);
    let used = element(&page.body, "used-card", "div");
    assert!(
        used.contains("<b>1</b>") && used.contains("used (2 used, 1 refunded)"),
        "{used}"
    );
    let given = element(&page.body, "given-card", "div");
    assert!(
        given.contains("<b>50.00</b>") && given.contains("(100.00 given, 50.00 refunded)"),
        "{given}"
    );
    let legend = element(&page.body, "chart-legend", "p");
    assert!(
        legend.contains("used (2, 1 refunded since)")
            && legend.contains("discount given (100.00, 50.00 taken back by refunds"),
        "{legend}"
    );

    let (platform, _) = key(&app, Role::Platform, None).await;
    let cookie = sign_in_cookie(&app, &platform).await;
    let path = "/console/reconciliation?from=2026-11-24T00:00&to=2026-11-25T00:00";
    let page = answer(&app, page_get(path, &cookie)).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(
        page.body
            .contains("<th class=\"num\">Refunds</th><th class=\"num\">Discount refunded</th>"),
        "{}",
        page.body
    );
    let total = element(&page.body, "funder-total", "tr");
    let cells: Vec<&str> = total
        .split("<td class=\"num\">")
        .skip(1)
        .map(|c| c.split('<').next().unwrap())
        .collect();
    assert_eq!(cells, ["2", "100.00", "1", "50.00", "50.00"], "{total}");
}

#[tokio::test]
async fn the_chart_has_a_slot_for_every_hour_or_day_of_its_range() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let t = used_and_refunded(&app, &mkey, m.get()).await;
    let cookie = sign_in_cookie(&app, &mkey).await;
    let chart = |hours: u32| {
        let path = format!("/console/templates/{t}?hours={hours}");
        let app = &app;
        let cookie = cookie.clone();
        async move {
            let page = answer(app, page_get(&path, &cookie)).await;
            assert_eq!(page.status, StatusCode::OK);
            let svg = element(&page.body, "chart", "svg").to_owned();
            svg
        }
    };
    let svg = chart(48).await;
    assert_eq!(svg.matches("<g class=\"slot\">").count(), 48, "{svg}");
    assert!(svg.contains("data-slots=\"48\""));
    // Ticks every 6 hours, on the clock's round hours; the axes' ends inside the chart.
    let ticks: Vec<&str> = svg
        .split("class=\"x-tick\"")
        .skip(1)
        .map(|t| t.split('>').nth(1).unwrap().split('<').next().unwrap())
        .collect();
    assert_eq!(
        ticks,
        ["18:00", "11-23", "06:00", "12:00", "18:00", "11-24", "06:00", "12:00"],
        "{svg}"
    );
    assert!(svg.contains("class=\"y-tick\""), "{svg}");
    assert!(svg.contains("from 2026-11-22 15:00 UTC") && svg.contains("to 2026-11-24 14:00 UTC"));
    let svg = chart(720).await;
    assert_eq!(svg.matches("<g class=\"slot\">").count(), 30, "{svg}");
    assert!(
        svg.contains("to 2026-11-24<") && svg.contains("from 2026-10-26<"),
        "{svg}"
    );
}
