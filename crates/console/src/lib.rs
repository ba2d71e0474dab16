//! coupond's web console, served by `coupond serve` under `/console`: server-rendered pages
//! for the platform and its merchants, from the one binary, working offline.
//!
//! - Pages call the application layer (`coupond_app::App`) with the session's identity under
//!   each operation's access ([`session::Session::act`]), as the API's handlers do, so a page
//!   obeys the same roles and rules, written once; an issuance upload is read by the API's own
//!   upload reader. [`problem`]: a refusal in the words the API would answer it with.
//! - [`session`]: sign-in with an operator account (email and password) or an API key, a
//!   session stored in the database (shared by every instance) named by a random id in a
//!   private cookie; sign-out, expiry, revoking the key, and disabling the account or changing
//!   its password end it at once everywhere.
//! - `throttle`: failed account sign-ins wait longer and longer, per email and per address.
//! - [`csrf`]: every form carries its session's own token, and a POST from another origin is
//!   refused.
//! - `assets`: the stylesheet, the console's script and the vendored htmx, embedded and
//!   cached for good.
//! - `headers`: the Content-Security-Policy (no inline script), framing, sniffing and referrer
//!   headers every console answer carries.
//! - `views`: one module per area (sign-in, home, activities, templates), askama templates
//!   under `templates/` with a base layout and htmx partials.
#![forbid(unsafe_code)]

mod assets;
pub mod csrf;
mod headers;
pub mod problem;
pub mod session;
mod throttle;
mod views;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::FromRef;
use axum::Router;
use axum_extra::extract::cookie::Key;
use coupond_api::AppState;

/// Where the console is served.
pub const BASE: &str = "/console";

/// How the console keeps sessions.
#[derive(Clone, Debug)]
pub struct ConsoleSettings {
    /// At least 32 bytes: the session cookies' encryption derives from it, so instances
    /// sharing it share sessions (which live in the database). `None`: a random key per
    /// process (its cookies are unreadable after a restart).
    pub secret: Option<Vec<u8>>,
    /// Mark the session cookie `Secure` (serve the console over TLS, at a proxy). A request
    /// that says it arrived over https (`X-Forwarded-Proto: https`) gets it regardless.
    pub secure_cookies: bool,
    /// How long a sign-in lasts.
    pub session_ttl: Duration,
    /// Failed account sign-ins each email and each client address may make before every
    /// further attempt waits (1 s, doubling per failure).
    pub sign_in_free_failures: u32,
    /// The longest such wait.
    pub sign_in_max_delay: Duration,
    /// Whether a platform or merchant API key may sign into the console (off by default:
    /// people sign in with their own accounts; keys are for machines).
    pub key_sign_in: bool,
    /// Whether platform operators must have a second factor: one without is sent to set it up
    /// before any other page.
    pub require_totp_for_platform: bool,
}

/// Why the console could not be set up.
#[derive(Debug)]
pub enum ConsoleError {
    /// The secret is shorter than 32 bytes.
    ShortSecret,
}

impl std::fmt::Display for ConsoleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConsoleError::ShortSecret => f.write_str("console_secret must be at least 32 bytes"),
        }
    }
}

impl std::error::Error for ConsoleError {}

/// The console's state: read-only, cheap to clone.
#[derive(Clone)]
pub struct Console {
    inner: Arc<Inner>,
}

struct Inner {
    app: AppState,
    key: Key,
    settings: ConsoleSettings,
    /// Failed account sign-ins, per email and per client address.
    sign_ins: throttle::SignInThrottle,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console").finish_non_exhaustive()
    }
}

impl FromRef<Console> for Key {
    fn from_ref(c: &Console) -> Key {
        c.inner.key.clone()
    }
}

impl Console {
    pub fn new(app: AppState, settings: ConsoleSettings) -> Result<Self, ConsoleError> {
        let key = match &settings.secret {
            Some(s) if s.len() < 32 => return Err(ConsoleError::ShortSecret),
            Some(s) => Key::from(&derive(s)),
            None => Key::generate(),
        };
        Ok(Console {
            inner: Arc::new(Inner {
                sign_ins: throttle::SignInThrottle::new(
                    settings.sign_in_free_failures,
                    settings.sign_in_max_delay,
                ),
                app,
                key,
                settings,
            }),
        })
    }

    pub fn app(&self) -> &AppState {
        &self.inner.app
    }

    pub fn settings(&self) -> &ConsoleSettings {
        &self.inner.settings
    }

    /// Failed account sign-ins, per email and per client address.
    pub(crate) fn sign_ins(&self) -> &throttle::SignInThrottle {
        &self.inner.sign_ins
    }

    /// A permit to read an upload of `who` (a principal's scope), if `who` has none being
    /// read by either door and one of the API's `max_concurrent_uploads` is free.
    pub(crate) fn upload_permit(&self, who: &str) -> Option<coupond_api::uploads::UploadPermit> {
        self.inner.app.upload_permit(who)
    }
}

/// 64 bytes of key from a secret of at least 32: SHA-512 over a label and the secret (the
/// secret is already random; the label keeps this key apart from any other use of it).
fn derive(secret: &[u8]) -> [u8; 64] {
    use sha2::{Digest, Sha512};
    let mut h = Sha512::new();
    h.update(b"coupond console key\n");
    h.update(secret);
    h.finalize().into()
}

/// The console's routes, under [`BASE`], each answer with the console's security headers.
pub fn router(console: Console) -> Router {
    let max_upload = console.app().settings().max_upload_bytes;
    let proxies = console.app().settings().trusted_proxies.clone();
    views::routes(max_upload)
        .with_state(console)
        .layer(axum::middleware::from_fn(move |req, next| {
            from_client(proxies.clone(), req, next)
        }))
        .layer(axum::middleware::map_response(headers::secure))
}

/// Runs a page's request in the audit trail's context with the client it came from (the
/// address a trusted proxy names, else the peer): the application calls the page makes, and
/// the changes it makes itself, are recorded with that client. Who acts is set where it is
/// known (`Session::act` for its calls, a page for its own changes); until then, the console.
async fn from_client(
    proxies: Arc<coupond_api::forwarded::TrustedProxies>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::extract::ConnectInfo;
    use coupond_app::records::audit;
    let client = req
        .extensions()
        .get::<ConnectInfo<std::net::SocketAddr>>()
        .map(|peer| proxies.client(peer.0.ip(), req.headers()).to_string());
    let ctx = audit::Context {
        who: audit::Who::System("console".to_owned()),
        request_id: coupond_api::observe::current_request_id(),
        client,
    };
    audit::acting(ctx, next.run(req)).await
}
