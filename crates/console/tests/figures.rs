//! The performance and settlement pages show what the API counts: a merchant's activity
//! template, one coupon claimed through an SMS campaign's `source` and used on a 500.00 order
//! (20.00 off), the platform paying 60 % of each discount, and a 300.00 order paid without a
//! coupon. The merchant's performance page shows the funnel, the channel, the money and the
//! average order with a coupon beside the one without; the platform's settlement page shows the
//! 12.00 it owes the merchant; a period with nothing says so.

mod support;

use axum::http::{Method, StatusCode};
use coupond_api::AppSettings;
use coupond_store::Role;
use serde_json::json;

use support::{
    answer, app_with_settings, element, key, merchant, page_get, sign_in_cookie, t0, v1, App,
};

/// The activity (60 % platform) and its one used coupon. The activity's id.
async fn campaign(app: &App, platform: &str, mkey: &str, m: i64) -> i64 {
    let at = |h: i64| t0().plus(time::Duration::hours(h)).to_string();
    let activity = json!({
        "title": "Spring", "cities": [1], "kind": "amount_off", "value_min": 100,
        "value_max": 5000, "funding": {"platform_bps": 6000},
        "enrollment": {"start": at(-1), "end": at(1)}, "run": {"start": at(1), "end": at(720)}
    });
    let (status, a) = v1(app, platform, Method::POST, "/v1/activities", activity).await;
    assert_eq!(status, StatusCode::CREATED, "{a}");
    let template = json!({
        "activity_id": a["id"], "title": "20 off", "value": {"kind": "amount_off", "amount": 2000},
        "cities": [1], "total_stock": 10, "validity": {"type": "relative", "days": 7}
    });
    let (status, t) = v1(app, mkey, Method::POST, "/v1/templates", template).await;
    assert_eq!(status, StatusCode::CREATED, "{t}");
    app.clock.advance(time::Duration::hours(2));
    let (service, _) = key(app, Role::Service, None).await;
    let claim = format!("/v1/templates/{}/claims", t["id"]);
    let body = json!({"user_id": "u-1", "source": "sms-1"});
    let (status, c) = v1(app, &service, Method::POST, &claim, body).await;
    assert_eq!(status, StatusCode::CREATED, "{c}");
    let order = json!({
        "user_id": "u-1", "city_id": 1,
        "lines": [{"product_id": "p-1", "merchant_id": m, "category_id": 1,
                   "unit_price": 50_000, "quantity": 1, "kind": "item"}]
    });
    let body = json!({"order": order, "coupon_ids": [c["id"]]});
    let (status, r) = v1(app, &service, Method::POST, "/v1/orders/o-1/lock", body).await;
    assert_eq!(status, StatusCode::OK, "{r}");
    let (status, r) = v1(
        app,
        &service,
        Method::POST,
        "/v1/orders/o-1/confirm",
        json!({}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{r}");
    let mut plain = order.clone();
    plain["lines"][0]["unit_price"] = json!(30_000);
    let body = json!({ "order": plain });
    let (status, r) = v1(app, &service, Method::POST, "/v1/orders/p-1/record", body).await;
    assert_eq!(status, StatusCode::OK, "{r}");
    a["id"].as_i64().unwrap()
}

#[tokio::test]
async fn the_pages_show_the_figures_and_what_is_owed() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (mkey, _) = key(&app, Role::Merchant, Some(m)).await;
    let (platform, _) = key(&app, Role::Platform, None).await;
    let a = campaign(&app, &platform, &mkey, m.get()).await;

    let cookie = sign_in_cookie(&app, &mkey).await;
    let page = answer(
        &app,
        page_get(&format!("/console/performance?activity_id={a}"), &cookie),
    )
    .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let funnel = element(&page.body, "funnel", "table");
    assert!(
        funnel.contains("<td>Used</td><td class=\"num\">1</td><td class=\"num\">100.00 %</td>"),
        "{funnel}"
    );
    // Every rate is the API's own (over the page's period: the last 30 days to now) (the refunds of the uses, the rest of those reached).
    let input = |name: &str| {
        let at = page.body.find(&format!("name=\"{name}\"")).unwrap();
        let rest = &page.body[at..];
        let v = rest.split("value=\"").nth(1).unwrap();
        v.split('"').next().unwrap().to_owned()
    };
    let period = format!("from={}:00Z&to={}:00Z", input("from"), input("to"));
    let (_, report) = v1(
        &app,
        &mkey,
        Method::GET,
        &format!("/v1/reports/performance?activity_id={a}&{period}"),
        serde_json::Value::Null,
    )
    .await;
    let f = &report["totals"]["funnel"];
    assert!(f.is_object(), "{report}");
    for (label, rate) in [
        ("Locked at checkout", "lock_rate_bps"),
        ("Used", "use_rate_bps"),
        ("Refunded (of the uses)", "refund_rate_bps"),
        ("Expired unused", "expiry_rate_bps"),
        ("Revoked", "revoke_rate_bps"),
    ] {
        let bps = f[rate].as_i64().unwrap();
        let shown = format!("{}.{:02} %</td>", bps / 100, bps % 100);
        let row = funnel
            .split(&format!("<td>{label}</td>"))
            .nth(1)
            .unwrap_or_default();
        assert!(
            row.split("</tr>").next().unwrap().contains(&shown),
            "{label}: {funnel}"
        );
    }
    let channels = element(&page.body, "channels", "table");
    assert!(
        channels.contains("<td>source:sms-1</td><td class=\"num\">1</td><td class=\"num\">1</td>")
            && channels.contains(
                "<td class=\"num\">20.00</td><td class=\"num\">1</td><td class=\"num\">500.00</td>"
            ),
        "{channels}"
    );
    let compared = element(&page.body, "compared", "table");
    assert!(
        compared.contains("<td>With a coupon</td><td class=\"num\">1</td><td class=\"num\">500.00</td><td class=\"num\">500.00</td>")
            && compared.contains("<td>Without a coupon</td><td class=\"num\">1</td><td class=\"num\">300.00</td><td class=\"num\">300.00</td>"),
        "{compared}"
    );
    let csv = format!("/console/performance?activity_id={a}&format=csv");
    let download = answer(&app, page_get(&csv, &cookie)).await;
    assert_eq!(download.status, StatusCode::OK);
    assert!(
        download.body.starts_with("line,key,issued"),
        "{}",
        download.body
    );

    let cookie = sign_in_cookie(&app, &platform).await;
    let page = answer(&app, page_get("/console/settlement", &cookie)).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(
        element(&page.body, "total-owed", "strong").contains("12.00"),
        "{}",
        page.body
    );
    let heading = element(&page.body, "merchant-1", "h2");
    assert!(
        heading.contains("Harbour Homes") && heading.ends_with(": 12.00"),
        "{heading}"
    );
    let quiet = "/console/settlement?from=2020-01-01T00:00&to=2020-02-01T00:00";
    let page = answer(&app, page_get(quiet, &cookie)).await;
    assert!(
        page.body.contains("owes no merchant anything"),
        "{}",
        page.body
    );
}
