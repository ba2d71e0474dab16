//! The per-route guard, as a typed tower layer: it authenticates the caller and admits it
//! only if its role is in the route's `roles` (and, for an operator account, if its role may
//! act in the route's `area`). The principal is handed to the handler as a request extension,
//! and what the handler changes is recorded in the audit trail as this caller's.
//!
//! Typed rather than `from_fn_with_state`, which for each request cloned the route, boxed it
//! again as the next service and boxed that service's future besides its own: every
//! authenticated request passes here.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use coupond_domain::Area;
use tower::{Layer, Service, ServiceExt};

use coupond_app::identify::Origin;
use coupond_app::Access;

use super::{identify, identify_caller, name_in_log, Caller, Role};
use crate::error::ApiError;
use crate::state::AppState;

/// The guard of one route: the roles it admits and the area it acts in.
#[derive(Clone)]
pub struct RouteGuard {
    state: AppState,
    roles: &'static [Role],
    area: Area,
}

impl std::fmt::Debug for RouteGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouteGuard")
            .field("roles", &self.roles)
            .field("area", &self.area)
            .finish_non_exhaustive()
    }
}

impl RouteGuard {
    pub fn new(state: AppState, roles: &'static [Role], area: Area) -> Self {
        RouteGuard { state, roles, area }
    }

    /// Runs `route` with `req` if its caller is admitted; the refusal otherwise.
    async fn admit<S>(self, mut req: Request, route: S) -> Response
    where
        S: Service<Request, Response = Response, Error = Infallible>,
    {
        let RouteGuard { state, roles, area } = self;
        // A console page's call carries its caller in process; anyone else shows a key.
        let caller = req.extensions().get::<Caller>();
        let in_process = caller.is_some();
        let identified = match caller {
            Some(caller) => identify_caller(&state, caller, area).await,
            None => identify(&state, req.headers()).await,
        };
        // The request's log line names who asked and from where (the client a trusted proxy
        // names, else the peer), once: a console page's calls run in the page's own request
        // span, whose caller the console named when it read the session (a field recorded
        // again would be printed again).
        if let (Ok((p, who)), false) = (&identified, in_process) {
            name_in_log(p, who);
        }
        let client = req
            .extensions()
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|peer| {
                state
                    .settings()
                    .trusted_proxies
                    .client(peer.0.ip(), req.headers())
            });
        if let (Some(client), false) = (client, in_process) {
            tracing::Span::current().record("client", tracing::field::display(client));
        }
        let (p, who) = match identified {
            Ok(found) => found,
            Err(e) => return e.into_response(),
        };
        if let Err(refused) = state.admit(&p, &who, Access { roles, area }) {
            return ApiError::from(refused).into_response();
        }
        req.extensions_mut().insert(p);
        // What the handler changes is recorded in the audit trail as this caller's. A console
        // page's call has no peer of its own: its page's client stands.
        let origin = Origin {
            request_id: crate::observe::current_request_id(),
            client: client.filter(|_| !in_process).map(|c| c.to_string()),
        };
        let answer = state.as_caller(who, origin, route.oneshot(req)).await;
        answer.unwrap_or_else(|never| match never {})
    }
}

impl<S> Layer<S> for RouteGuard {
    type Service = Guarded<S>;

    fn layer(&self, inner: S) -> Guarded<S> {
        Guarded {
            guard: self.clone(),
            inner,
        }
    }
}

/// A route behind its [`RouteGuard`].
#[derive(Clone, Debug)]
pub struct Guarded<S> {
    guard: RouteGuard,
    inner: S,
}

impl<S> Service<Request> for Guarded<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        // The service made ready goes with this request; a clone stays for the next one.
        let clone = self.inner.clone();
        let ready = std::mem::replace(&mut self.inner, clone);
        let guard = self.guard.clone();
        Box::pin(async move { Ok(guard.admit(req, ready).await) })
    }
}
