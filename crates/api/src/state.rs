//! [`AppState`]: the application ([`App`]) and what only the HTTP front door needs (the
//! user-token keys, the `Idempotency-Key` limit, the uploads being read). Read-only after
//! start and cheap to clone.

use std::ops::Deref;
use std::sync::Arc;

use coupond_app::ratelimit::Limit;
use coupond_app::App;

use crate::auth::JwtKeys;
use crate::uploads::{UploadPermit, Uploads};

/// Everything a handler needs, shared by all requests. It dereferences to the [`App`] it
/// fronts, so a handler calls the application as `state.claim(...)`.
#[derive(Clone, Debug)]
pub struct AppState {
    app: App,
    http: Arc<Http>,
}

#[derive(Debug)]
struct Http {
    jwt: JwtKeys,
    /// Writes with an `Idempotency-Key`, per scope (user or merchant).
    idempotency_limits: Limit<String>,
    /// The uploads being read: the bound on uploads in memory at once, one per caller.
    uploads: Uploads,
}

impl AppState {
    /// The front door of `app`; `jwt_secret` signs and verifies user tokens (the secret the
    /// application was built with, which also signs its unsubscribe links).
    pub fn new(app: App, jwt_secret: &[u8]) -> Self {
        let settings = app.settings();
        let http = Http {
            jwt: JwtKeys::new(jwt_secret),
            idempotency_limits: Limit::new("idempotency", settings.idempotency_rate),
            uploads: Uploads::new(settings.max_concurrent_uploads as usize),
        };
        AppState {
            app,
            http: Arc::new(http),
        }
    }

    /// The application this front door calls.
    pub fn app(&self) -> &App {
        &self.app
    }

    pub fn jwt(&self) -> &JwtKeys {
        &self.http.jwt
    }

    /// Writes with an `Idempotency-Key`, per scope (user or merchant).
    pub fn idempotency_limits(&self) -> &Limit<String> {
        &self.http.idempotency_limits
    }

    /// A permit to read an upload for `who` (a principal's scope), if fewer than
    /// `max_concurrent_uploads` are being read and `who` has none being read.
    pub fn upload_permit(&self, who: &str) -> Option<UploadPermit> {
        self.http.uploads.permit(who)
    }

    /// Forgets rate-limit keys back at a full burst (called periodically by `serve`).
    pub fn shrink_limits(&self) {
        self.app.shrink_limits();
        self.http.idempotency_limits.shrink();
    }
}

impl Deref for AppState {
    type Target = App;

    fn deref(&self) -> &App {
        &self.app
    }
}
