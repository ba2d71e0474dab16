//! The flows after the first ones: a merchant runs its template (codes, extending it, a
//! coupon's history, its listing edited and searched for), and the platform's home, sorting,
//! merchants and their keys (a new key signs in; a revoked one no longer does); webhook
//! endpoints on the Webhooks page; the API reference. The pages' policy refuses inline script:
//! each confirmation is shown to be asked (and, declined, to send nothing) by the console's
//! own script.

use fantoccini::{Client, Locator};

use super::{click, fill, local, set_value, shot, sign_in, sign_out, text, until, until_at};

/// Confirms every `confirm()` on the page (the revoke and abort buttons ask first).
pub(super) async fn confirm_all(c: &Client) {
    c.execute("window.confirm = () => true;", vec![])
        .await
        .unwrap();
}

/// Clicks `at`, declining the confirmation it asks for, and returns what it asked (empty when
/// nothing asked: had the form been sent, the page that follows knows of no question).
pub(super) async fn declined(c: &Client, at: Locator<'_>) -> String {
    let element = c.find(at).await.unwrap_or_else(|e| panic!("{at:?}: {e}"));
    declined_element(c, &element).await
}

/// As [`declined`], for an element already found.
pub(super) async fn declined_element(
    c: &Client,
    element: &fantoccini::elements::Element,
) -> String {
    c.execute(
        "window.asked = ''; window.confirm = (m) => { window.asked = m; return false; };",
        vec![],
    )
    .await
    .unwrap();
    element.click().await.unwrap();
    let asked = c.execute("return window.asked;", vec![]).await.unwrap();
    asked.as_str().unwrap_or_default().to_owned()
}

/// Fetches `path` in the page (the session's cookie goes with it) and returns the text.
async fn fetch(c: &Client, path: &str) -> String {
    let js = format!(
        "const done = arguments[arguments.length - 1];
         fetch('{path}').then(r => r.text()).then(done);"
    );
    let v = c.execute_async(&js, vec![]).await.unwrap();
    v.as_str().unwrap_or_default().to_owned()
}

pub(super) async fn merchant_runs_the_template(c: &Client, base: &str, key: &str, id: i64) {
    sign_in(c, base, key).await;
    c.goto(&format!("{base}/console/templates/{id}"))
        .await
        .unwrap();
    // Aborting asks first; declined, the template stays active.
    let asked = declined(c, Locator::Id("abort")).await;
    assert!(asked.starts_with("Abort this template?"), "{asked:?}");
    until(c, "#status", |t| t == "active").await;
    // Codes: five made at once, downloaded as CSV.
    fill(c, "count", "5").await;
    fill(c, "prefix", "WNT").await;
    click(c, Locator::Id("generate-codes")).await;
    until(c, "#notice", |t| t.contains("codes generated")).await;
    let link = c.find(Locator::Css("a.codes-csv")).await.unwrap();
    let href = link.attr("href").await.unwrap().unwrap_or_default();
    let csv = fetch(c, &href).await;
    assert_eq!(csv.lines().count(), 6, "{csv}");
    assert!(csv.lines().skip(1).all(|l| l.starts_with("WNT")), "{csv}");

    // Extended: claiming ends later.
    click(c, Locator::Css("#extend summary")).await;
    set_value(c, "claim_end", &local(96)).await;
    click(c, Locator::Id("extend-submit")).await;
    until(c, "#notice", |t| t.contains("extended")).await;
    let day = local(96).chars().take(10).collect::<String>();
    until(c, "dl.facts", |t| t.contains(&day)).await;

    // The coupon revoked by support shows its history, reason included.
    c.goto(&format!("{base}/console/users?user=u-3"))
        .await
        .unwrap();
    click(c, Locator::Css("tr[id^='coupon-'] a")).await;
    until(c, "h1", |t| t.starts_with("Coupon ")).await;
    until(c, "#history", |t| {
        t.contains("support ticket 7") && t.contains("revoked")
    })
    .await;

    // A listing edited, then found by a user's search (no live coupon is bound to it).
    c.goto(&format!("{base}/console/listings")).await.unwrap();
    click(c, Locator::LinkText("Studio by the park")).await;
    until(c, "h1", |t| t.starts_with("Listing ")).await;
    fill(c, "price", "3300").await;
    click(c, Locator::Id("save-listing")).await;
    until_at(
        c,
        Locator::XPath("//tr[contains(., 'Studio by the park')]"),
        |t| t.contains("3,300.00"),
    )
    .await;
    c.goto(&format!("{base}/console/listings?city=1&has_coupon=no"))
        .await
        .unwrap();
    until(c, "main", |t| t.contains("Studio by the park")).await;
    c.goto(&format!("{base}/console/listings?has_coupon=yes"))
        .await
        .unwrap();
    let found = text(c, "main").await;
    assert!(!found.contains("Studio by the park"), "{found}");
    sign_out(c).await;
}

pub(super) async fn platform_manages_merchants(c: &Client, base: &str, key: &str) {
    sign_in(c, base, key).await;
    // Home: today's figures, the timeline, the outbox.
    until(c, "#today", |t| t.contains("claimed today")).await;
    until(c, "#timeline", |t| t.contains("Spring rental festival")).await;
    until(c, "#outbox", |t| t.contains("webhooks")).await;

    // Templates sorted by how much of their stock is claimed, most first.
    c.goto(&format!("{base}/console/templates?sort=claimed&desc=1"))
        .await
        .unwrap();
    let shares: Vec<f64> = c
        .execute(
            "return [...document.querySelectorAll('#templates tbody td > .bar[title$=claimed]')]
                 .map(b => parseFloat(b.title));",
            vec![],
        )
        .await
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_f64())
        .collect();
    assert!(shares.len() > 1, "{shares:?}");
    assert!(shares.windows(2).all(|w| w[0] >= w[1]), "{shares:?}");

    // A merchant added, given a key; the key signs in as that merchant.
    c.goto(&format!("{base}/console/merchants")).await.unwrap();
    fill(c, "name", "Harbour Homes").await;
    fill(c, "short_name", "Harbour").await;
    fill(c, "cities", "1").await;
    click(c, Locator::Id("create-merchant")).await;
    until(c, "h1", |t| t.starts_with("Harbour Homes")).await;
    let page = c.current_url().await.unwrap();
    fill(c, "label", "console, front desk").await;
    click(c, Locator::Id("create-key")).await;
    let secret = text(c, "#new-key-secret").await;
    assert!(secret.starts_with("cpd_"), "{secret}");
    sign_out(c).await;
    sign_in(c, base, &secret).await;
    until(c, "h1", |t| t == "Your coupons").await;
    sign_out(c).await;

    // Revoking asks first; declined, the key stays. Revoked, it signs in no more.
    sign_in(c, base, key).await;
    c.goto(page.as_str()).await.unwrap();
    let asked = declined(c, Locator::Css("button[data-key]")).await;
    assert!(asked.starts_with("Revoke this key?"), "{asked:?}");
    let keys = text(c, "#keys").await;
    assert!(!keys.contains("revoked"), "{keys}");
    confirm_all(c).await;
    click(c, Locator::Css("button[data-key]")).await;
    until(c, "#keys", |t| t.contains("revoked")).await;
    shot(c, "merchant-keys").await;
    sign_out(c).await;
    c.find(Locator::Id("key"))
        .await
        .unwrap()
        .send_keys(&secret)
        .await
        .unwrap();
    click(c, Locator::Id("sign-in")).await;
    until(c, "body", |t| t.contains("not a valid")).await;
}

/// Registers an endpoint at `url` with `key` (over the API, from the page) and finds it on the
/// Webhooks page, without any of `hidden` (others' endpoints).
pub(super) async fn webhooks_show_their_endpoints(
    c: &Client,
    base: &str,
    key: &str,
    url: &str,
    hidden: &[&str],
) {
    sign_in(c, base, key).await;
    let js = format!(
        "const done = arguments[arguments.length - 1];
         fetch('/v1/webhooks', {{method: 'POST', headers: {{'Authorization': 'Bearer {key}',
           'Content-Type': 'application/json'}},
           body: JSON.stringify({{url: '{url}', event_types: ['*']}})}})
           .then(r => r.status).then(done);"
    );
    let status = c.execute_async(&js, vec![]).await.unwrap();
    assert_eq!(status.as_u64(), Some(201), "registering {url}");
    c.goto(&format!("{base}/console/webhooks")).await.unwrap();
    let shown = until(c, "#webhooks", |t| t.contains(url)).await;
    for other in hidden {
        assert!(!shown.contains(other), "{other} in {shown}");
    }
    shot(c, "webhooks").await;
    sign_out(c).await;
}

/// `/docs` renders the API reference (Redoc, from the binary) under the headers it is sent.
pub(super) async fn the_api_reference_renders(c: &Client, base: &str) {
    c.goto(&format!("{base}/docs")).await.unwrap();
    until(c, "#redoc h1", |t| t.contains("coupond")).await;
    until(c, "#redoc", |t| {
        t.contains("list_webhooks") || t.contains("/v1/webhooks")
    })
    .await;
}
