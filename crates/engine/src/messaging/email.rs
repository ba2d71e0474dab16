//! Email over SMTP (lettre): STARTTLS, implicit TLS, or plain for a relay on the same host;
//! authentication when the URL has credentials. Each message is multipart (text and an HTML
//! rendering of the same text), carries its delivery id as `Message-ID`, and, when it is
//! marketing, a `List-Unsubscribe` link (with RFC 8058's one-click header); a service message
//! says that it is one.

use std::time::Duration;

use async_trait::async_trait;
use coupond_domain::messaging::{Channel, Purpose};
use coupond_store::Outbound;
use lettre::message::header::{Header, HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use secrecy::{ExposeSecret, SecretString};

use super::courier::{Retry, SendError, Transport};
use super::Unsubscribe;

/// How long a connection, a command or a whole message may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Sends email through one SMTP server.
pub struct SmtpTransport {
    mailer: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    /// The domain of `Message-ID`s (the sender's).
    domain: String,
    unsubscribe: Unsubscribe,
}

impl std::fmt::Debug for SmtpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL's credentials are never shown.
        f.debug_struct("SmtpTransport")
            .field("from", &self.from.to_string())
            .finish_non_exhaustive()
    }
}

/// How to reach the SMTP server: `smtp://user:pass@host:587?tls=starttls` (also `tls=none`,
/// for a relay on the same host) or `smtps://host:465` (TLS from the first byte).
pub fn mailer(url: &SecretString) -> Result<AsyncSmtpTransport<Tokio1Executor>, String> {
    let url = url::Url::parse(url.expose_secret()).map_err(|e| format!("not a URL: {e}"))?;
    let host = url.host_str().ok_or("the URL names no host")?.to_owned();
    let tls_mode = url
        .query_pairs()
        .find(|(k, _)| k == "tls")
        .map(|(_, v)| v.into_owned());
    let params = || TlsParameters::new(host.clone()).map_err(|e| format!("TLS: {e}"));
    let (tls, default_port) = match (url.scheme(), tls_mode.as_deref()) {
        ("smtps", None | Some("wrapper" | "implicit")) => (Tls::Wrapper(params()?), 465),
        ("smtp", None | Some("starttls" | "required")) => (Tls::Required(params()?), 587),
        ("smtp", Some("opportunistic")) => (Tls::Opportunistic(params()?), 587),
        ("smtp", Some("none")) => (Tls::None, 25),
        (s, t) => return Err(format!("scheme {s} with tls={} is not one of smtp (tls=starttls, opportunistic, none) or smtps", t.unwrap_or(""))),
    };
    let mut b = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host)
        .port(url.port().unwrap_or(default_port))
        .tls(tls)
        .timeout(Some(TIMEOUT));
    if !url.username().is_empty() {
        let user = percent_decode(url.username());
        let pass = percent_decode(url.password().unwrap_or(""));
        b = b.credentials(Credentials::new(user, pass));
    }
    Ok(b.build())
}

/// Whether `s` is a sender address (`Coupons <coupons@example.com>`).
pub fn check_sender(s: &str) -> Result<(), String> {
    s.parse::<Mailbox>().map(drop).map_err(|e| e.to_string())
}

fn percent_decode(s: &str) -> String {
    url::form_urlencoded::parse(format!("x={s}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

impl SmtpTransport {
    /// `from`: the sender (`Coupons <coupons@example.com>`).
    pub fn new(url: &SecretString, from: &str, unsubscribe: Unsubscribe) -> Result<Self, String> {
        let from: Mailbox = from.parse().map_err(|e| format!("email.from: {e}"))?;
        Ok(SmtpTransport {
            mailer: mailer(url)?,
            domain: from.email.domain().to_owned(),
            from,
            unsubscribe,
        })
    }

    /// The email of `m`.
    fn message(&self, m: &Outbound) -> Result<Message, SendError> {
        let never = |e: &dyn std::fmt::Display| SendError {
            answer: e.to_string(),
            retry: Retry::Never,
        };
        let to: Mailbox = m.address.parse().map_err(|e| never(&e))?;
        let marketing = m.kind.purpose() == Purpose::Marketing;
        let link = m
            .user_id
            .as_ref()
            .filter(|_| marketing)
            .map(|u| self.unsubscribe.link(u, Channel::Email));
        let (text, html) = bodies(&m.body, link.as_deref());
        let mut b = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(m.subject.clone())
            .message_id(Some(format!(
                "<coupond.{}.{}@{}>",
                m.id,
                m.key.replace(':', "-"),
                self.domain
            )));
        if let Some(link) = &link {
            b = b
                .header(ListUnsubscribe(format!("<{link}>")))
                .header(ListUnsubscribePost);
        }
        b.multipart(MultiPart::alternative_plain_html(text, html))
            .map_err(|e| never(&e))
    }
}

/// The text and HTML bodies: the message, then the unsubscribe link (marketing) or the note
/// that it is a service message.
fn bodies(body: &str, unsubscribe: Option<&str>) -> (String, String) {
    let footer = match unsubscribe {
        Some(link) => format!("To stop these emails: {link}"),
        None => "This is a service message about your coupons.".to_owned(),
    };
    let text = format!("{body}\n\n--\n{footer}\n");
    let mut html = String::from("<!doctype html><html><body>");
    for para in body.split("\n\n") {
        html.push_str("<p>");
        html.push_str(&escape(para).replace('\n', "<br>"));
        html.push_str("</p>");
    }
    match unsubscribe {
        Some(link) => html.push_str(&format!(
            "<hr><p><small><a href=\"{}\">Unsubscribe</a></small></p>",
            escape(link)
        )),
        None => html.push_str(&format!("<hr><p><small>{}</small></p>", escape(&footer))),
    }
    html.push_str("</body></html>");
    (text, html)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[derive(Clone)]
struct ListUnsubscribe(String);

impl Header for ListUnsubscribe {
    fn name() -> HeaderName {
        HeaderName::new_from_ascii_str("List-Unsubscribe")
    }
    fn parse(s: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(ListUnsubscribe(s.to_owned()))
    }
    fn display(&self) -> HeaderValue {
        HeaderValue::new(Self::name(), self.0.clone())
    }
}

/// RFC 8058: a mail client may unsubscribe with one POST to the link.
#[derive(Clone)]
struct ListUnsubscribePost;

impl Header for ListUnsubscribePost {
    fn name() -> HeaderName {
        HeaderName::new_from_ascii_str("List-Unsubscribe-Post")
    }
    fn parse(_: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(ListUnsubscribePost)
    }
    fn display(&self) -> HeaderValue {
        HeaderValue::new(Self::name(), "List-Unsubscribe=One-Click".to_owned())
    }
}

#[async_trait]
impl Transport for SmtpTransport {
    async fn send(&self, m: &Outbound) -> Result<String, SendError> {
        let email = self.message(m)?;
        match self.mailer.send(email).await {
            Ok(r) => Ok(format!(
                "{} {}",
                r.code(),
                r.message().collect::<Vec<_>>().join(" ")
            )),
            Err(e) => Err(SendError {
                answer: e.to_string(),
                retry: if e.is_permanent() {
                    Retry::Never
                } else {
                    Retry::Backoff
                },
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_escape_the_text_and_end_with_the_link_or_the_service_note() {
        let (text, html) = bodies(
            "Hi <b>you</b>\n\nBye",
            Some("https://x/unsubscribe?token=a&b"),
        );
        assert!(text.ends_with("To stop these emails: https://x/unsubscribe?token=a&b\n"));
        assert!(html.contains("<p>Hi &lt;b&gt;you&lt;/b&gt;</p><p>Bye</p>"));
        assert!(html.contains("href=\"https://x/unsubscribe?token=a&amp;b\""));
        let (text, _) = bodies("Revoked", None);
        assert!(text.contains("This is a service message"));
    }

    /// (The connection pool starts a task: a runtime is needed, as `serve` has.)
    #[tokio::test]
    async fn smtp_urls() {
        let ok = |u: &str| mailer(&SecretString::from(u.to_owned())).map(drop);
        ok("smtp://user:p%40ss@relay.example:587?tls=starttls").unwrap();
        ok("smtps://relay.example").unwrap();
        ok("smtp://127.0.0.1:2525?tls=none").unwrap();
        assert!(ok("http://relay.example").is_err());
        assert!(ok("smtp://relay.example?tls=maybe").is_err());
    }
}
