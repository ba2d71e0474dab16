//! The console in a real browser: headless Chromium driven over WebDriver (chromedriver,
//! through `fantoccini`) against the real binary running `serve --demo`. Without Chromium
//! or chromedriver the test prints `SKIP browser: <why>`; `.ci/run` installs both and fails
//! if the test skipped.
//!
//! With `COUPOND_SCREENSHOTS=<dir>` the test saves screenshots of the main screens at
//! 1280 px there (`docs/console/` in the README is made this way).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};

use crate::{export, serve, terminate_and_wait};

mod operations;
mod roles;

/// Where Debian puts them; `COUPOND_CHROMIUM` / `COUPOND_CHROMEDRIVER` override.
fn tool(var: &str, default: &str) -> Option<PathBuf> {
    let path = PathBuf::from(std::env::var(var).unwrap_or_else(|_| default.to_owned()));
    path.is_file().then_some(path)
}

/// chromedriver on a free port, once it says it is ready.
struct Driver {
    child: Child,
    url: String,
}

impl Driver {
    fn start(binary: &Path) -> Driver {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = Command::new(binary)
            .arg(format!("--port={port}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        loop {
            let mut line = String::new();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "chromedriver exited early"
            );
            if line.contains("started successfully") {
                break;
            }
        }
        std::thread::spawn(move || for _ in out.lines() {});
        Driver {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn browser(driver: &Driver, chromium: &Path) -> Client {
    let caps = serde_json::json!({
        "goog:chromeOptions": {
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,1000"],
        }
    });
    let serde_json::Value::Object(caps) = caps else {
        unreachable!()
    };
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&driver.url)
        .await
        .expect("a WebDriver session")
}

/// How long a page may take to show what a step waits for.
const WAIT: Duration = Duration::from_secs(20);

/// The text of the first element matching `css` once it satisfies `ok`, polled until
/// [`WAIT`]: after a click the old page may still be showing, and its elements go stale.
async fn until(c: &Client, css: &str, ok: impl Fn(&str) -> bool) -> String {
    until_at(c, Locator::Css(css), ok).await
}

/// [`until`] for any locator.
async fn until_at(c: &Client, at: Locator<'_>, ok: impl Fn(&str) -> bool) -> String {
    let css = format!("{at:?}");
    let deadline = std::time::Instant::now() + WAIT;
    let mut last = String::new();
    loop {
        if let Ok(e) = c.find(at).await {
            if let Ok(t) = e.text().await {
                if ok(&t) {
                    return t;
                }
                last = t;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{css} never showed what was expected; last: {last:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The text of the first element matching `css`, once there is one.
async fn text(c: &Client, css: &str) -> String {
    until(c, css, |_| true).await
}

/// Clicks the element `at` finds on the page as it is.
async fn click(c: &Client, at: Locator<'_>) {
    c.find(at)
        .await
        .unwrap_or_else(|e| panic!("{at:?}: {e}"))
        .click()
        .await
        .unwrap();
}

async fn sign_in(c: &Client, base: &str, key: &str) {
    c.goto(&format!("{base}/console")).await.unwrap();
    assert!(c
        .current_url()
        .await
        .unwrap()
        .path()
        .ends_with("/console/login"));
    c.find(Locator::Id("key"))
        .await
        .unwrap()
        .send_keys(key)
        .await
        .unwrap();
    click(c, Locator::Id("sign-in")).await;
    text(c, "#sign-out").await;
}

async fn sign_out(c: &Client) {
    click(c, Locator::Id("sign-out")).await;
    text(c, "#sign-in").await;
}

async fn fill(c: &Client, name: &str, value: &str) {
    let field = c
        .find(Locator::Css(&format!("[name='{name}']")))
        .await
        .unwrap();
    field.clear().await.unwrap();
    field.send_keys(value).await.unwrap();
}

/// Sets a `datetime-local` input (typing into one depends on the locale).
async fn set_value(c: &Client, name: &str, value: &str) {
    let js = format!("document.querySelector(\"[name='{name}']\").value = '{value}';");
    c.execute(&js, vec![]).await.unwrap();
}

async fn shot(c: &Client, name: &str) {
    if let Ok(dir) = std::env::var("COUPOND_SCREENSHOTS") {
        let png = c.screenshot().await.unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(Path::new(&dir).join(format!("{name}.png")), png).unwrap();
    }
}

/// `datetime-local` text for now plus `hours` (UTC).
fn local(hours: i64) -> String {
    let t = time::OffsetDateTime::now_utc() + time::Duration::hours(hours);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_in_a_browser() {
    let (Some(chromium), Some(chromedriver)) = (
        tool("COUPOND_CHROMIUM", "/usr/bin/chromium"),
        tool("COUPOND_CHROMEDRIVER", "/usr/bin/chromedriver"),
    ) else {
        println!("SKIP browser: /usr/bin/chromium or /usr/bin/chromedriver is not installed (apt-get install chromium chromium-driver)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (server, lines) = serve(
        dir.path(),
        &["--demo", "--listen", "127.0.0.1:0"],
        "export USER_TOKEN=",
    );
    let base = export(&lines, "COUPOND");
    let driver = Driver::start(&chromedriver);
    let c = browser(&driver, &chromium).await;
    let outcome = flows(&c, &base, &lines).await;
    let _ = c.close().await;
    terminate_and_wait(server);
    outcome.unwrap();
}

async fn flows(c: &Client, base: &str, lines: &[String]) -> Result<(), String> {
    let platform = export(lines, "PLATFORM_KEY");
    platform_creates_an_activity(c, base, &platform).await;
    let template = merchant_enrolls_and_issues(c, base, &export(lines, "MERCHANT1_KEY")).await;
    operations::merchant_runs_the_template(c, base, &export(lines, "MERCHANT1_KEY"), template)
        .await;
    another_merchant_cannot_open_it(c, base, &export(lines, "MERCHANT2_KEY"), template).await;
    operations::platform_manages_merchants(c, base, &platform).await;
    let (ours, theirs) = (
        "http://93.184.216.34/platform-hook",
        "http://93.184.216.34/m1-hook",
    );
    operations::webhooks_show_their_endpoints(c, base, &platform, ours, &[]).await;
    let merchant = export(lines, "MERCHANT1_KEY");
    operations::webhooks_show_their_endpoints(c, base, &merchant, theirs, &[ours]).await;
    operations::the_api_reference_renders(c, base).await;
    roles::people_at_work(c, base, lines).await;
    Ok(())
}

async fn platform_creates_an_activity(c: &Client, base: &str, key: &str) {
    sign_in(c, base, key).await;
    until(c, "h1", |t| t == "Platform").await;
    shot(c, "platform-home").await;
    // A phone's width: the menu wraps, wide columns give way, nothing scrolls sideways.
    c.set_window_size(390, 844).await.unwrap();
    c.refresh().await.unwrap();
    let sideways: bool = c
        .execute(
            "return document.documentElement.scrollWidth > document.documentElement.clientWidth;",
            vec![],
        )
        .await
        .unwrap()
        .as_bool()
        .unwrap_or(true);
    shot(c, "platform-home-390").await;
    assert!(!sideways, "the home page scrolls sideways at 390 px");
    c.set_window_size(1280, 1000).await.unwrap();
    c.goto(&format!("{base}/console/activities/new"))
        .await
        .unwrap();
    fill(c, "title", "Winter sale").await;
    fill(c, "cities", "1").await;
    fill(c, "value_min", "10").await;
    fill(c, "value_max", "5").await;
    activity_windows(c).await;
    click(c, Locator::Id("create-activity")).await;
    // The API's rule, shown at its field; the values typed stay.
    let why = text(c, ".field-error[data-field='value_max']").await;
    assert!(why.contains("value_min"), "{why}");
    fill(c, "value_max", "50").await;
    click(c, Locator::Id("create-activity")).await;
    until(c, "h1", |t| t.starts_with("Winter sale")).await;
    // Edited while it is enrolling: the form comes filled in.
    // Aborting asks first; declined, the activity stays.
    let asked = operations::declined(c, Locator::Id("abort-activity")).await;
    assert!(asked.starts_with("Abort this activity?"), "{asked:?}");
    click(c, Locator::Id("edit-activity")).await;
    until(c, "h1", |t| t.starts_with("Edit activity")).await;
    fill(c, "title", "Winter sale, extended").await;
    click(c, Locator::Id("create-activity")).await;
    until(c, "h1", |t| t.starts_with("Winter sale, extended")).await;
    shot(c, "activity").await;

    // The reconciliation of a period, with its CSV link.
    let (from, to) = (local(-24), local(1));
    c.goto(&format!(
        "{base}/console/reconciliation?from={from}&to={to}"
    ))
    .await
    .unwrap();
    until(c, "main", |t| t.contains("By funder")).await;

    // The platform's performance over the last 30 days: the demo's claims by channel, its
    // orders; and the settlement (the demo's template is the merchant's own: nothing owed).
    c.goto(&format!("{base}/console/performance"))
        .await
        .unwrap();
    until(c, "#channels", |t| {
        t.contains("source:app-home") && t.contains("source:sms-spring") && t.contains("direct")
    })
    .await;
    until(c, "#funnel", |t| t.contains("Used")).await;
    shot(c, "performance").await;
    c.goto(&format!("{base}/console/settlement")).await.unwrap();
    until(c, "main", |t| t.contains("owes no merchant anything")).await;

    // The outbox as a feed (the demo's history is in it), merchants, webhooks.
    c.goto(&format!("{base}/console/events?type=coupon.used"))
        .await
        .unwrap();
    until(c, "#events", |t| t.contains("coupon.used")).await;
    c.goto(&format!("{base}/console/merchants")).await.unwrap();
    until(c, "main", |t| t.contains("Westlake Apartments Co.")).await;
    c.goto(&format!("{base}/console/webhooks")).await.unwrap();
    until(c, "main", |t| t.contains("No webhook endpoints")).await;

    // A form without its token is refused, and changes nothing.
    c.goto(&format!("{base}/console/activities/new"))
        .await
        .unwrap();
    fill(c, "title", "Forged").await;
    c.execute(
        "document.querySelector('#activity-form [name=csrf]').remove();",
        vec![],
    )
    .await
    .unwrap();
    click(c, Locator::Id("create-activity")).await;
    until(c, "#problem", |t| {
        t.contains("not sent from this console page")
    })
    .await;
    c.goto(&format!("{base}/console/activities")).await.unwrap();
    let list = text(c, "main").await;
    assert!(
        list.contains("Winter sale") && !list.contains("Forged"),
        "{list}"
    );

    // Signing out ends the session: the console asks to sign in again.
    sign_out(c).await;
    c.goto(&format!("{base}/console")).await.unwrap();
    assert!(c
        .current_url()
        .await
        .unwrap()
        .path()
        .ends_with("/console/login"));
}

/// Sets the activity form's windows: enrolling from now for a day, running the day after.
async fn activity_windows(c: &Client) {
    set_value(c, "enrollment_start", &local(0)).await;
    set_value(c, "enrollment_end", &local(24)).await;
    set_value(c, "run_start", &local(24)).await;
    set_value(c, "run_end", &local(48)).await;
}

/// Clicks the element with `id` once the page shows it.
async fn click_when_shown(c: &Client, id: &str) {
    c.wait()
        .at_most(WAIT)
        .for_element(Locator::Id(id))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

/// Opens `activity` from the activities list and sends its enrollment form: `title`, worth
/// `value` (major units), in city 1, 10 coupons.
async fn enroll(c: &Client, base: &str, activity: &str, title: &str, value: &str) {
    c.goto(&format!("{base}/console/activities")).await.unwrap();
    click(c, Locator::LinkText(activity)).await;
    click_when_shown(c, "enroll").await;
    fill(c, "title", title).await;
    fill(c, "value", value).await;
    fill(c, "cities", "1").await;
    fill(c, "total_stock", "10").await;
    click(c, Locator::Id("create-template")).await;
}

/// On `user`'s support page, revokes their first coupon with `reason`. The form asks first:
/// with `decline_first`, declining is tried before accepting, and what it asked is checked.
async fn revoke_first_coupon(
    c: &Client,
    base: &str,
    user: &str,
    reason: &str,
    decline_first: bool,
) {
    c.goto(&format!("{base}/console/users?user={user}"))
        .await
        .unwrap();
    let row = c
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css("tr[id^='coupon-']"))
        .await
        .unwrap();
    let reason_field = row.find(Locator::Css("[name='reason']")).await.unwrap();
    reason_field.send_keys(reason).await.unwrap();
    let button = row.find(Locator::Css("button")).await.unwrap();
    if decline_first {
        let asked = operations::declined_element(c, &button).await;
        assert!(asked.starts_with("Revoke coupon"), "{asked:?}");
    }
    operations::confirm_all(c).await;
    button.click().await.unwrap();
    until(c, "tr[id^='coupon-'] .badge", |t| t == "revoked").await;
}

/// Enrolls in the demo's enrolling activity (an out-of-bounds value refused at its field),
/// makes a standalone template, binds a listing, uploads an issuance file and watches the job
/// finish, then sees the chart. Returns the standalone template's id.
async fn merchant_enrolls_and_issues(c: &Client, base: &str, key: &str) -> i64 {
    sign_in(c, base, key).await;
    enroll(c, base, "Spring rental festival", "Too generous", "900").await;
    let why = text(c, ".field-error[data-field='value']").await;
    assert!(!why.is_empty());
    fill(c, "title", "100 off").await;
    fill(c, "value", "100").await;
    click(c, Locator::Id("create-template")).await;
    until(c, "h1", |t| t.starts_with("100 off")).await;

    c.goto(&format!("{base}/console/templates/new"))
        .await
        .unwrap();
    fill(c, "title", "Flash 50 off").await;
    fill(c, "value", "50").await;
    fill(c, "cities", "1").await;
    fill(c, "total_stock", "100").await;
    set_value(c, "claim_start", &local(-1)).await;
    set_value(c, "claim_end", &local(48)).await;
    click(c, Locator::Id("create-template")).await;
    text(c, "#publish").await;
    let url = c.current_url().await.unwrap();
    let id: i64 = url.path().rsplit('/').next().unwrap().parse().unwrap();
    click(c, Locator::Id("publish")).await;
    until(c, "#status", |t| t == "active").await;

    c.goto(&format!("{base}/console/listings")).await.unwrap();
    fill(c, "title", "Studio by the park").await;
    fill(c, "external_id", "park-1").await;
    fill(c, "city_id", "1").await;
    fill(c, "category_id", "1").await;
    fill(c, "price", "3200").await;
    fill(c, "deposit", "6400").await;
    click(c, Locator::Id("create-listing")).await;
    // The demo's listings are there too: work on the new one's row, once the page shows it.
    const ROW: &str = "//tr[contains(., 'Studio by the park')]";
    until_at(c, Locator::XPath(ROW), |_| true).await;
    let row = c.find(Locator::XPath(ROW)).await.unwrap();
    // The demo's own template is live too: choose this one.
    row.find(Locator::Css("select"))
        .await
        .unwrap()
        .select_by_label("Flash 50 off")
        .await
        .unwrap();
    row.find(Locator::Css("button"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let badge = "//tr[contains(., 'Studio by the park')]//span[contains(@class, 'badge')]";
    until_at(c, Locator::XPath(badge), |t| t.starts_with("Flash 50 off")).await;
    // The limit is shown with what is bound.
    until_at(c, Locator::XPath(ROW), |t| t.contains("1 of 3")).await;
    // Unbound, and the row says so.
    c.find(Locator::XPath(&format!("{badge}//button")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until_at(c, Locator::XPath(ROW), |t| t.contains("none")).await;

    let file = std::env::temp_dir().join(format!("coupond-browser-{}.csv", std::process::id()));
    // 40 users, then 20,000 repeats of one of them: a 100 KiB file, over the 64 KiB every
    // other console form may send; repeats count once.
    let mut users: Vec<String> = (0..40).map(|i| format!("u-{i}")).collect();
    users.extend(std::iter::repeat_n("u-0".to_owned(), 20_000));
    std::fs::write(&file, users.join("\n")).unwrap();
    assert!(std::fs::metadata(&file).unwrap().len() > 64 * 1024);
    c.goto(&format!("{base}/console/templates/{id}"))
        .await
        .unwrap();
    c.find(Locator::Id("issuance-file"))
        .await
        .unwrap()
        .send_keys(file.to_str().unwrap())
        .await
        .unwrap();
    click(c, Locator::Id("upload")).await;
    // htmx polls the job's partial until it is done.
    let done = text(c, ".job[data-state='done']").await;
    assert!(
        done.contains("40 of 40 users handled") && done.contains("40 issued"),
        "{done}"
    );
    shot(c, "issuance-progress").await;
    let _ = std::fs::remove_file(&file);
    c.goto(&format!("{base}/console/templates/{id}"))
        .await
        .unwrap();
    let chart = c.find(Locator::Css("svg.chart")).await.unwrap();
    let label = chart.attr("aria-label").await.unwrap().unwrap_or_default();
    assert!(label.contains("40 claimed"), "{label}");
    shot(c, "template").await;
    until(c, "#holders", |t| t.contains("u-0")).await;
    c.goto(&format!("{base}/console/templates/{id}?hours=168"))
        .await
        .unwrap();
    until(c, "h2", |t| t.contains("168 hours")).await;
    // Past a week, the chart adds up days.
    c.goto(&format!("{base}/console/templates/{id}?hours=720"))
        .await
        .unwrap();
    until(c, "h2", |t| t.contains("30 days, per day")).await;
    let chart = c.find(Locator::Css("svg.chart")).await.unwrap();
    let label = chart.attr("aria-label").await.unwrap().unwrap_or_default();
    assert!(label.contains("per day: 40 claimed"), "{label}");
    let csv = c
        .execute_async(
            &format!(
                "const done = arguments[arguments.length - 1];
                 fetch('/console/templates/{id}/coupons.csv').then(r => r.text()).then(done);"
            ),
            vec![],
        )
        .await
        .unwrap();
    let csv = csv.as_str().unwrap_or_default();
    assert!(csv.lines().count() > 40 && csv.contains("u-39"), "{csv}");

    // A live template's stock is changed (raised here; lowered only down to what is claimed).
    fill(c, "total_stock", "120").await;
    click(c, Locator::Id("top-up")).await;
    until(c, "#notice", |t| t.contains("stock changed")).await;
    until(c, "main", |t| t.contains("40 / 120")).await;

    // Support: a user's coupon of this template, revoked (the form asks first: accepted).
    revoke_first_coupon(c, base, "u-3", "support ticket 7", false).await;
    sign_out(c).await;
    id
}

async fn another_merchant_cannot_open_it(c: &Client, base: &str, key: &str, template: i64) {
    sign_in(c, base, key).await;
    c.goto(&format!("{base}/console/templates/{template}"))
        .await
        .unwrap();
    until(c, "h1", |t| t == "Not found").await;
    sign_out(c).await;
}
