//! Who is calling: API keys (platform, merchant, service) and user JWTs, and the per-route
//! role guard.
//!
//! An `Authorization: Bearer` credential that starts with [`KEY_PREFIX`] is an API key: it is
//! hashed with SHA-256 and looked up (keys are random 256-bit secrets, so a fast hash is the
//! right one; only the hash is stored). Anything else is a user JWT (HS256, `sub` = user id,
//! `exp` checked against the injected clock, not the system's).

use std::fmt;

use axum::http::{header, HeaderMap};
use coupond_app::records::Who;
use coupond_domain::{Area, OperatorId, Timestamp, UserId};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::state::AppState;

mod guard;
pub use coupond_app::caller::may_act;
pub use coupond_app::{Principal, Role};
pub use guard::RouteGuard;

/// Keys are made in the engine (`coupond_engine::keys`); these names stay for callers here.
pub use coupond_engine::keys::{
    generate_api_key, hash_api_key, issue as issue_key, GeneratedKey, KEY_PREFIX,
};

/// HS256 keys for user tokens. `Debug` never prints them.
#[derive(Clone)]
pub struct JwtKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
}

impl fmt::Debug for JwtKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JwtKeys(<redacted>)")
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    sub: String,
    exp: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    iat: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    nbf: Option<i64>,
}

/// Clock skew tolerated between the token's issuer and coupond, for `nbf` and `iat`.
const LEEWAY_SECS: i64 = 30;

impl JwtKeys {
    pub fn new(secret: &[u8]) -> Self {
        JwtKeys {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
        }
    }

    /// A token for `user`, valid from `now` for `ttl`.
    pub fn mint(
        &self,
        user: &UserId,
        now: Timestamp,
        ttl: time::Duration,
    ) -> Result<String, ApiError> {
        let iat = now.unix_micros() / 1_000_000;
        let claims = Claims {
            sub: user.to_string(),
            iat: Some(iat),
            exp: iat + ttl.whole_seconds(),
            nbf: None,
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .map_err(ApiError::internal)
    }

    /// The user a token names, if it is signed by us and valid at `now`: not expired, not
    /// before its `nbf`, not issued in the future (`iat`; both with a 30 s leeway for clock
    /// skew), and living no longer than `max_lifetime` (from `iat`, or from `now` without it).
    pub fn verify(
        &self,
        token: &str,
        now: Timestamp,
        max_lifetime: time::Duration,
    ) -> Result<UserId, ApiError> {
        let mut v = Validation::new(Algorithm::HS256);
        // Times are checked below against the injected clock.
        v.validate_exp = false;
        v.validate_nbf = false;
        v.set_required_spec_claims(&["exp", "sub"]);
        // The platform's identity provider may add an audience; coupond does not assign one.
        v.validate_aud = false;
        let c = jsonwebtoken::decode::<Claims>(token, &self.decoding, &v)
            .map_err(|_| ApiError::unauthorized("the bearer token is not valid"))?
            .claims;
        let now = now.unix_micros().div_euclid(1_000_000);
        if c.exp <= now {
            return Err(ApiError::unauthorized("the bearer token has expired"));
        }
        if c.nbf.is_some_and(|nbf| nbf > now + LEEWAY_SECS) {
            return Err(ApiError::unauthorized(
                "the bearer token is not valid yet (nbf)",
            ));
        }
        if c.iat.is_some_and(|iat| iat > now + LEEWAY_SECS) {
            return Err(ApiError::unauthorized(
                "the bearer token was issued in the future (iat)",
            ));
        }
        let from = c.iat.unwrap_or(now);
        if c.exp.saturating_sub(from) > max_lifetime.whole_seconds() {
            return Err(ApiError::unauthorized(
                "the bearer token lives longer than this server accepts (max_token_lifetime)",
            ));
        }
        UserId::parse(&c.sub)
            .map_err(|_| ApiError::unauthorized("the bearer token names no valid user"))
    }
}

/// The caller the `Authorization` header names, and who it is in the audit trail.
pub async fn identify(state: &AppState, headers: &HeaderMap) -> Result<(Principal, Who), ApiError> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or(ApiError::unauthorized(
            "send Authorization: Bearer <API key or user token>",
        ))?;
    let credential = value
        .to_str()
        .ok()
        .and_then(bearer)
        .filter(|c| !c.is_empty() && c.len() <= 4096)
        .ok_or(ApiError::unauthorized(
            "send Authorization: Bearer <API key or user token>",
        ))?;
    if credential.starts_with(KEY_PREFIX) {
        return identify_hash(state, &KeyHash(hash_api_key(credential))).await;
    }
    let user = state
        .jwt()
        .verify(credential, state.now(), state.settings().max_token_lifetime)?;
    Ok((Principal::User(user.clone()), Who::User(user)))
}

/// Resolves an API key (platform, merchant or service) to its principal, through the key
/// cache: a revoked key stops working within `cache_ttl`. The console's sessions use this too.
pub async fn authenticate_key(state: &AppState, credential: &str) -> Result<Principal, ApiError> {
    identify_hash(state, &KeyHash(hash_api_key(credential)))
        .await
        .map(|(p, _)| p)
}

/// An API key named by its SHA-256 hash, for callers in this process (the console's
/// sessions keep the hash, never the key). Put on a request's extensions it stands for
/// `Authorization: Bearer <the key>`: extensions never come from the network, so only code in
/// this process can use it. `Debug` never shows it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct KeyHash(pub [u8; 32]);

impl std::fmt::Debug for KeyHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyHash(..)")
    }
}

/// Who signed in, for code in this process: an API key by its hash, or an operator account
/// by its id. The console's sessions keep one and identify it on every request
/// ([`identify_caller`]). Put on a request's extensions it stands for an `Authorization`
/// header (how the API's tests call routes as an operator): extensions never come from the
/// network, so only code in this process can use it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    Key(KeyHash),
    Operator(OperatorId),
}

/// The principal an in-process [`Caller`] acts as in `area` (an operator whose role may not
/// act there is refused, 403), and who it is in the audit trail.
pub async fn identify_caller(
    state: &AppState,
    caller: &Caller,
    area: Area,
) -> Result<(Principal, Who), ApiError> {
    match caller {
        Caller::Key(hash) => identify_hash(state, hash).await,
        Caller::Operator(id) => {
            let id = state.identify_operator(*id, area).await?;
            Ok((id.principal, id.who))
        }
    }
}

/// Names the caller in the current request's log line: its principal, and the key (its id,
/// never the key itself) when a key asked. Called once per request.
pub fn name_in_log(p: &Principal, who: &Who) {
    let span = tracing::Span::current();
    span.record("principal", p.actor().to_text());
    if let Who::Key { id, .. } = who {
        span.record("key", id);
    }
}

/// The principal of the key with this hash, and the key as the audit trail names it
/// ([`coupond_app::App::identify_key`]).
pub async fn identify_hash(state: &AppState, hash: &KeyHash) -> Result<(Principal, Who), ApiError> {
    let id = state.identify_key(&hash.0).await?;
    Ok((id.principal, id.who))
}

/// The credential of `Bearer <credential>`; the scheme is case-insensitive (RFC 9110).
fn bearer(header: &str) -> Option<&str> {
    let (scheme, credential) = header.trim_start().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credential.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_expire_by_the_injected_clock() {
        let keys = JwtKeys::new(b"secret");
        let now = Timestamp::parse("2026-01-01T00:00:00Z").unwrap();
        let user = UserId::parse("u-1").unwrap();
        let max = time::Duration::days(30);
        let token = keys.mint(&user, now, time::Duration::hours(1)).unwrap();
        assert_eq!(keys.verify(&token, now, max).unwrap(), user);
        let later = now.plus(time::Duration::hours(1));
        assert!(keys.verify(&token, later, max).is_err());
        assert!(JwtKeys::new(b"other").verify(&token, now, max).is_err());
        assert!(keys.verify("garbage", now, max).is_err());
    }

    /// A token signed with our secret, with these claims.
    fn signed(claims: serde_json::Value) -> String {
        jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(b"secret"),
        )
        .unwrap()
    }

    #[test]
    fn tokens_not_yet_valid_issued_ahead_or_living_too_long_are_refused() {
        let keys = JwtKeys::new(b"secret");
        let now = Timestamp::parse("2026-01-01T00:00:00Z").unwrap();
        let t = now.unix_micros() / 1_000_000;
        let max = time::Duration::days(30);
        let day = 86_400;
        let refused = [
            serde_json::json!({"sub": "u-1", "exp": t + 3600, "nbf": t + day}),
            serde_json::json!({"sub": "u-1", "exp": t + 3600, "iat": t + 3000}),
            serde_json::json!({"sub": "u-1", "exp": 1_i64 << 62}),
            serde_json::json!({"sub": "u-1", "exp": t + 31 * day, "iat": t}),
            serde_json::json!({"sub": "u-1", "exp": t + 31 * day}),
        ];
        for claims in refused {
            let e = keys.verify(&signed(claims.clone()), now, max).unwrap_err();
            assert_eq!(e.status(), axum::http::StatusCode::UNAUTHORIZED, "{claims}");
        }
        let accepted = [
            serde_json::json!({"sub": "u-1", "exp": t + 3600, "nbf": t + 10, "iat": t + 10}),
            serde_json::json!({"sub": "u-1", "exp": t + 29 * day, "iat": t - day}),
            serde_json::json!({"sub": "u-1", "exp": t + 3600}),
        ];
        for claims in accepted {
            assert!(
                keys.verify(&signed(claims.clone()), now, max).is_ok(),
                "{claims}"
            );
        }
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("BEARER abc"), Some("abc"));
        assert_eq!(bearer("bEaReR  abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer"), None);
    }

    #[test]
    fn generated_keys_are_prefixed_and_hashed() {
        let k = generate_api_key();
        assert!(k.secret.starts_with(KEY_PREFIX));
        assert_eq!(k.hash, hash_api_key(&k.secret));
        assert_ne!(generate_api_key().secret, k.secret);
        assert!(!format!("{k:?}").contains(&k.secret));
    }
}
