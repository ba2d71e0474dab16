//! A console page's request line names its caller once: the page's in-process API calls run
//! in the page's own request span and used to record the key again for each call
//! (`key=3 key=3 principal=merchant:1 key=3`).

mod support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use coupond_api::AppSettings;
use coupond_store::Role;

use support::{answer, app_with_settings, key, merchant, page_get, sign_in_cookie};

/// The text the fmt layer writes, kept for the test to read.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_page_request_names_its_key_once() {
    let app = app_with_settings(AppSettings::default()).await;
    let m = merchant(&app).await;
    let (secret, key_id) = key(&app, Role::Merchant, Some(m)).await;
    let cookie = sign_in_cookie(&app, &secret).await;
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    // The templates page calls the API several times (templates, activities, the merchant).
    let page = answer(&app, page_get("/console/templates", &cookie)).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("route=/console/templates") && l.contains("status=200"))
        .unwrap_or_else(|| panic!("no request line in {text}"));
    assert_eq!(line.matches(&format!("key={key_id}")).count(), 1, "{line}");
    assert_eq!(line.matches("principal=").count(), 1, "{line}");
}
