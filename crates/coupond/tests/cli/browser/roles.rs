//! People at work, each signed in with the demo's account for their role: marketing creates an
//! activity whose enrollments wait for approval, the merchant's owner enrolls, marketing
//! approves it from the Approvals queue; support revokes a coupon with a reason; finance
//! downloads the reconciliation and is offered no revoke; the merchant's staff see no API keys,
//! not even on the merchant's page opened by hand.

use fantoccini::{Client, Locator};

use super::{click, fill, local, set_value, shot, sign_out, text, until};

/// The demo's password for `email` (`#   EMAIL PASSWORD   (operator N)` in its output).
pub fn password(lines: &[String], email: &str) -> String {
    lines
        .iter()
        .find_map(|l| {
            let mut words = l.trim_start_matches('#').split_whitespace();
            (words.next() == Some(email)).then(|| words.next().unwrap_or_default().to_owned())
        })
        .unwrap_or_else(|| panic!("no demo account {email}"))
}

async fn sign_in_as(c: &Client, base: &str, lines: &[String], role: &str) {
    let email = format!("{role}@demo.coupond.example");
    c.goto(&format!("{base}/console")).await.unwrap();
    fill(c, "email", &email).await;
    fill(c, "password", &password(lines, &email)).await;
    click(c, Locator::Id("sign-in-account")).await;
    until(c, "#account", |t| t == email).await;
}

/// Whether the page now shows an element `css` finds.
async fn shows(c: &Client, css: &str) -> bool {
    c.find(Locator::Css(css)).await.is_ok()
}

pub async fn people_at_work(c: &Client, base: &str, lines: &[String]) {
    sign_in_as(c, base, lines, "marketing").await;
    assert!(
        !shows(c, "#menu-people").await,
        "marketing manages no people"
    );
    c.goto(&format!("{base}/console/activities/new"))
        .await
        .unwrap();
    fill(c, "title", "Curated winter").await;
    fill(c, "cities", "1").await;
    fill(c, "value_min", "10").await;
    fill(c, "value_max", "50").await;
    super::activity_windows(c).await;
    set_value(c, "approval", "required").await;
    click(c, Locator::Id("create-activity")).await;
    until(c, "h1", |t| t.starts_with("Curated winter")).await;
    sign_out(c).await;

    sign_in_as(c, base, lines, "owner").await;
    super::enroll(c, base, "Curated winter", "Owner's 20 off", "20").await;
    until(c, "#status", |t| t == "pending_approval").await;
    until(c, "#review", |t| t.contains("Waiting for the platform")).await;
    sign_out(c).await;

    sign_in_as(c, base, lines, "marketing").await;
    click(c, Locator::Id("menu-approvals")).await;
    until(c, "#approvals", |t| t.contains("Owner's 20 off")).await;
    shot(c, "approvals").await;
    click(c, Locator::LinkText("Owner's 20 off")).await;
    super::click_when_shown(c, "approve").await;
    until(c, "#status", |t| t == "scheduled").await;
    until(c, "#review", |t| t.starts_with("Approved")).await;
    sign_out(c).await;

    support_and_finance(c, base, lines).await;
    staff_see_no_keys(c, base, lines).await;
}

/// Support revokes a user's coupon with a reason; finance, on the same kind of page, is
/// offered no revoke, and downloads the reconciliation as CSV.
async fn support_and_finance(c: &Client, base: &str, lines: &[String]) {
    sign_in_as(c, base, lines, "support").await;
    super::revoke_first_coupon(c, base, "u-5", "ticket 12: asked by the user", true).await;
    sign_out(c).await;

    sign_in_as(c, base, lines, "finance").await;
    c.goto(&format!("{base}/console/users?user=u-6"))
        .await
        .unwrap();
    text(c, "tr[id^='coupon-']").await;
    assert!(
        !shows(c, "tr[id^='coupon-'] [name='reason']").await,
        "finance is offered no revoke"
    );
    let (from, to) = (local(-24), local(1));
    c.goto(&format!(
        "{base}/console/reconciliation?from={from}&to={to}"
    ))
    .await
    .unwrap();
    until(c, "main", |t| t.contains("By funder")).await;
    let csv = c
        .execute_async(
            "const done = arguments[arguments.length - 1];
             const a = [...document.querySelectorAll('a')].find(a => a.textContent === 'Download CSV');
             fetch(a.href).then(r => r.text()).then(done);",
            vec![],
        )
        .await
        .unwrap();
    let csv = csv.as_str().unwrap_or_default();
    assert!(csv.lines().count() > 1, "{csv}");
    sign_out(c).await;
}

async fn staff_see_no_keys(c: &Client, base: &str, lines: &[String]) {
    sign_in_as(c, base, lines, "staff").await;
    assert!(!shows(c, "#menu-keys").await && !shows(c, "#menu-people").await);
    let merchant = crate::export(lines, "MERCHANT1_ID");
    c.goto(&format!("{base}/console/merchants/{merchant}"))
        .await
        .unwrap();
    let page = text(c, "main").await;
    assert!(!page.contains("API keys"), "{page}");
    assert!(!shows(c, "#key-form").await);
    sign_out(c).await;
}
