//! SMS through an HTTP provider: [`TwilioTransport`] speaks Twilio's Messages API (a form POST
//! to `/2010-04-01/Accounts/{sid}/Messages.json` with Basic auth); [`HttpSmsTransport`] sends
//! any provider a form or JSON POST whose fields are set in configuration, with `{{to}}`,
//! `{{from}}`, `{{text}}` and `{{id}}` filled in (Aliyun, Tencent Cloud and most others take
//! this shape). Both reach the provider over HTTPS (the system's roots) or, for a local test
//! server, plain HTTP.
//!
//! A 2xx answer is sent; 429 and 5xx are tried again after the provider's `Retry-After` (or
//! the courier's backoff); other 4xx fail the message with the provider's answer.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::Bytes;
use coupond_store::Outbound;
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use secrecy::{ExposeSecret, SecretString};

use super::courier::{Retry, SendError, Transport};

/// How long one request to the provider may take.
const TIMEOUT: Duration = Duration::from_secs(20);
/// The most of a provider's answer read.
const MAX_ANSWER: usize = 16 * 1024;

type HttpsClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

fn client() -> Result<HttpsClient, String> {
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_native_roots()
        .map_err(|e| format!("the system's TLS roots: {e}"))?
        .https_or_http()
        .enable_http1()
        .build();
    Ok(Client::builder(TokioExecutor::new()).build(https))
}

/// Posts `req`, reads the answer (bounded) and sorts it into sent / retry / fail.
async fn exchange(
    c: &HttpsClient,
    req: hyper::Request<Full<Bytes>>,
) -> Result<(u16, String), SendError> {
    let backoff = |answer: String| SendError {
        answer,
        retry: Retry::Backoff,
    };
    let res = match tokio::time::timeout(TIMEOUT, c.request(req)).await {
        Ok(Ok(res)) => res,
        Ok(Err(e)) => return Err(backoff(coupond_store::error::chain(&e))),
        Err(_) => return Err(backoff(format!("no answer within {TIMEOUT:?}"))),
    };
    let status = res.status().as_u16();
    let retry_after = res
        .headers()
        .get(hyper::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let body = Limited::new(res.into_body(), MAX_ANSWER).collect().await;
    let text = body
        .map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned())
        .unwrap_or_else(|_| "(answer too long)".into());
    let answer = format!("{status} {}", text.chars().take(500).collect::<String>());
    match status {
        200..=299 => Ok((status, text)),
        429 | 500..=599 => Err(SendError {
            answer,
            retry: retry_after.map_or(Retry::Backoff, Retry::After),
        }),
        _ => Err(SendError {
            answer,
            retry: Retry::Never,
        }),
    }
}

fn bad_request(e: impl std::fmt::Display) -> SendError {
    SendError {
        answer: format!("could not build the request: {e}"),
        retry: Retry::Never,
    }
}

/// Twilio's Messages API.
pub struct TwilioTransport {
    client: HttpsClient,
    /// `https://api.twilio.com` (a local server in tests).
    base_url: String,
    account_sid: String,
    auth_token: SecretString,
    from: String,
}

impl std::fmt::Debug for TwilioTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwilioTransport")
            .field("base_url", &self.base_url)
            .field("account_sid", &self.account_sid)
            .finish_non_exhaustive()
    }
}

impl TwilioTransport {
    pub fn new(
        base_url: &str,
        account_sid: &str,
        auth_token: SecretString,
        from: &str,
    ) -> Result<Self, String> {
        Ok(TwilioTransport {
            client: client()?,
            base_url: base_url.trim_end_matches('/').to_owned(),
            account_sid: account_sid.to_owned(),
            auth_token,
            from: from.to_owned(),
        })
    }
}

#[async_trait]
impl Transport for TwilioTransport {
    async fn send(&self, m: &Outbound) -> Result<String, SendError> {
        let url = format!(
            "{}/2010-04-01/Accounts/{}/Messages.json",
            self.base_url, self.account_sid
        );
        let form = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("To", &m.address)
            .append_pair("From", &self.from)
            .append_pair("Body", &m.body)
            .finish();
        let auth = STANDARD.encode(format!(
            "{}:{}",
            self.account_sid,
            self.auth_token.expose_secret()
        ));
        let req = hyper::Request::post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("authorization", format!("Basic {auth}"))
            .body(Full::new(Bytes::from(form)))
            .map_err(bad_request)?;
        let (_, text) = exchange(&self.client, req).await?;
        // Twilio answers the message's resource; its `sid` names it.
        let sid = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("sid").and_then(|s| s.as_str()).map(str::to_owned));
        Ok(sid.unwrap_or(text))
    }
}

/// How the generic adapter encodes its fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyFormat {
    Form,
    Json,
}

/// Any provider that takes one POST per message.
pub struct HttpSmsTransport {
    client: HttpsClient,
    url: String,
    /// Headers sent with each request (an API key), values secret.
    headers: Vec<(String, SecretString)>,
    format: BodyFormat,
    /// Field name -> value with `{{to}}`, `{{from}}`, `{{text}}`, `{{id}}` placeholders.
    fields: BTreeMap<String, String>,
    from: String,
}

impl std::fmt::Debug for HttpSmsTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSmsTransport")
            .field("url", &self.url)
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

impl HttpSmsTransport {
    pub fn new(
        url: &str,
        headers: Vec<(String, SecretString)>,
        format: BodyFormat,
        fields: BTreeMap<String, String>,
        from: &str,
    ) -> Result<Self, String> {
        Ok(HttpSmsTransport {
            client: client()?,
            url: url.to_owned(),
            headers,
            format,
            fields,
            from: from.to_owned(),
        })
    }

    fn body(&self, m: &Outbound) -> (String, &'static str) {
        let filled: BTreeMap<&str, String> = self
            .fields
            .iter()
            .map(|(k, v)| {
                let v = v
                    .replace("{{to}}", &m.address)
                    .replace("{{from}}", &self.from)
                    .replace("{{id}}", &format!("coupond-{}", m.id))
                    .replace("{{text}}", &m.body);
                (k.as_str(), v)
            })
            .collect();
        match self.format {
            BodyFormat::Json => (
                serde_json::to_string(&filled).unwrap_or_default(),
                "application/json",
            ),
            BodyFormat::Form => {
                let mut s = url::form_urlencoded::Serializer::new(String::new());
                for (k, v) in &filled {
                    s.append_pair(k, v);
                }
                (s.finish(), "application/x-www-form-urlencoded")
            }
        }
    }
}

#[async_trait]
impl Transport for HttpSmsTransport {
    async fn send(&self, m: &Outbound) -> Result<String, SendError> {
        let (body, content_type) = self.body(m);
        let mut req = hyper::Request::post(&self.url).header("content-type", content_type);
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.expose_secret());
        }
        let req = req
            .body(Full::new(Bytes::from(body)))
            .map_err(bad_request)?;
        let (status, text) = exchange(&self.client, req).await?;
        Ok(format!(
            "{status} {}",
            text.chars().take(200).collect::<String>()
        ))
    }
}
