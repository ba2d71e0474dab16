//! A merchant's owner invites people from the People page (issue 61 point 8): the page says an
//! invitation is on its way and lists it pending, whatever the address; the invited person opens
//! the emailed link, chooses a password and can sign in; the link then works no more; an
//! address that has an account already is told so on that page, and nothing is made.

mod support;

use axum::http::StatusCode;
use coupond_api::AppSettings;
use coupond_domain::messaging::{Channel, MessageKind, QuietHours};
use coupond_domain::OperatorRole;
use coupond_engine::messaging::{ChannelRules, MessagingRules, Readers};
use coupond_store::OutboundQuery;

use support::{account, account_cookie, answer, app_with_settings, csrf_of, form_post, merchant};
use support::{page_get, App};

fn with_email() -> AppSettings {
    AppSettings {
        messaging: MessagingRules {
            readers: Readers::default(),
            channels: vec![ChannelRules {
                channel: Channel::Email,
                kinds: vec![MessageKind::OperatorInvited],
                quiet: QuietHours::parse("").unwrap(),
                per_second: 10,
                max_attempts: 3,
            }],
        },
        ..AppSettings::default()
    }
}

/// The path of the link emailed to `address`.
async fn link_sent_to(app: &App, address: &str) -> String {
    let q = OutboundQuery {
        limit: 20,
        ..OutboundQuery::default()
    };
    let sent = app.store.outbound(&q).await.unwrap();
    let mail = sent.iter().find(|o| o.address == address).unwrap();
    let at = mail.body.find("/console/invitation/").unwrap();
    mail.body[at..at + 20 + 64].to_owned()
}

#[tokio::test]
async fn an_owner_invites_and_the_invited_person_accepts() {
    let app = app_with_settings(with_email()).await;
    let m = merchant(&app).await;
    account(&app, "ada@example.com", OperatorRole::Admin, None).await;
    account(&app, "own@example.com", OperatorRole::Owner, Some(m)).await;
    let owner = account_cookie(&app, "own@example.com").await;

    let page = answer(&app, page_get("/console/people", &owner)).await.body;
    assert!(page.contains("Invite a person"), "{page}");
    let csrf = csrf_of(&page);
    for who in ["kim%40example.com", "ada%40example.com"] {
        let form = format!("csrf={csrf}&email={who}&name=Kim&role=staff");
        let a = answer(&app, form_post("/console/people", Some(&owner), form)).await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.body);
        assert!(a.body.contains("id=\"invitation-sent\""), "{}", a.body);
        assert!(!a.body.contains("set-password-link"), "{}", a.body);
    }
    let page = answer(&app, page_get("/console/people", &owner)).await.body;
    let pending = page.split("id=\"invitations\"").nth(1).unwrap();
    assert!(pending.contains("kim@example.com") && pending.contains("ada@example.com"));

    // Kim opens the link and accepts; it works once.
    let link = link_sent_to(&app, "kim@example.com").await;
    let open = answer(&app, page_get(&link, "")).await;
    assert_eq!(open.status, StatusCode::OK);
    assert!(open.body.contains("kim@example.com") && open.body.contains("staff"));
    let pass = "password=a+long+passphrase+kim&confirm=a+long+passphrase+kim".to_owned();
    let done = answer(&app, form_post(&link, None, pass.clone())).await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.body);
    assert!(
        done.body.contains("id=\"invitation-accepted\""),
        "{}",
        done.body
    );
    let again = answer(&app, form_post(&link, None, pass)).await;
    assert_eq!(again.status, StatusCode::GONE, "{}", again.body);
    let people = answer(&app, page_get("/console/people", &owner)).await.body;
    let accounts = people.split("id=\"invitations\"").next().unwrap();
    assert!(accounts.contains("kim@example.com"), "{people}");

    // Ada's address has an account: her page says so, and makes nothing.
    let link = link_sent_to(&app, "ada@example.com").await;
    let pass = "password=a+long+passphrase+ada&confirm=a+long+passphrase+ada".to_owned();
    let taken = answer(&app, form_post(&link, None, pass)).await;
    assert_eq!(taken.status, StatusCode::CONFLICT, "{}", taken.body);
    assert!(taken.body.contains("has a coupond console account already"));
}
