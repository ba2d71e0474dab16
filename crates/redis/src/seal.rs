//! [`NoticeKey`]: notices between instances are signed, so whoever can publish on the Redis
//! channel cannot speak for an instance.
//!
//! A notice travels as `v1.<signature>.<envelope JSON>`: the signature is HMAC-SHA256 of the
//! JSON's bytes under a key every instance derives from the secret they already share (the
//! user-token secret, configured or kept in the database), base64url without padding. The
//! envelope carries when it was sent; one older than [`MAX_AGE`] (or that far in the future)
//! is dropped, so a captured notice cannot be replayed later. Whatever a notice says, the
//! sold-out memo it feeds forgets it within `cache_ttl` anyway.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// How old a notice may be when heard (and how far ahead of this machine's clock).
pub const MAX_AGE: Duration = Duration::from_secs(30);

/// The version tag every sealed notice starts with.
const VERSION: &str = "v1.";

/// The key notices are signed with. Its `Debug` never shows it.
#[derive(Clone)]
pub struct NoticeKey([u8; 32]);

impl std::fmt::Debug for NoticeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NoticeKey(..)")
    }
}

/// Why a message on the channel was not taken as a notice.
#[derive(Debug, PartialEq, Eq)]
pub enum Unsealed {
    /// Not in the sealed form, or signed with another key.
    Forged,
    /// Sent more than [`MAX_AGE`] before (or after) now.
    Stale,
}

impl NoticeKey {
    /// The key derived from `shared_secret` (the user-token secret): every instance of one
    /// deployment derives the same one, nobody without the secret can.
    pub fn derive(shared_secret: &[u8]) -> Self {
        let mut mac = mac(shared_secret);
        mac.update(b"coupond cache notices v1");
        NoticeKey(mac.finalize().into_bytes().into())
    }

    /// `json` sealed for the channel.
    pub fn seal(&self, json: &str) -> String {
        let mut mac = mac(&self.0);
        mac.update(json.as_bytes());
        let signature = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
        format!("{VERSION}{signature}.{json}")
    }

    /// The JSON of a sealed message, if this key signed it.
    pub fn open<'a>(&self, message: &'a str) -> Result<&'a str, Unsealed> {
        let rest = message.strip_prefix(VERSION).ok_or(Unsealed::Forged)?;
        let (signature, json) = rest.split_once('.').ok_or(Unsealed::Forged)?;
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| Unsealed::Forged)?;
        let mut mac = mac(&self.0);
        mac.update(json.as_bytes());
        // Constant time: a forger learns nothing from how long a refusal took.
        mac.verify_slice(&signature).map_err(|_| Unsealed::Forged)?;
        Ok(json)
    }
}

/// Checks a notice's send time (milliseconds since the epoch) against this machine's clock.
pub fn check_age(sent_ms: i64, now: SystemTime) -> Result<(), Unsealed> {
    let now_ms = now
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let skew = now_ms.saturating_sub(sent_ms).unsigned_abs();
    if u128::from(skew) > MAX_AGE.as_millis() {
        return Err(Unsealed::Stale);
    }
    Ok(())
}

/// This machine's clock in milliseconds since the epoch, as notices carry it.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn mac(key: &[u8]) -> Hmac<Sha256> {
    // HMAC takes a key of any length.
    Hmac::<Sha256>::new_from_slice(key).unwrap_or_else(|_| unreachable!("HMAC takes any key"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_shared_key_opens_a_sealed_notice() {
        let key = NoticeKey::derive(b"the shared user-token secret");
        let sealed = key.seal(r#"{"kind":"keys_changed"}"#);
        assert_eq!(key.open(&sealed), Ok(r#"{"kind":"keys_changed"}"#));
        let other = NoticeKey::derive(b"someone else's secret");
        assert_eq!(other.open(&sealed), Err(Unsealed::Forged));
        let tampered = sealed.replace("keys_changed", "resync");
        assert_eq!(key.open(&tampered), Err(Unsealed::Forged));
        assert_eq!(
            key.open(r#"{"kind":"keys_changed"}"#),
            Err(Unsealed::Forged)
        );
        assert_eq!(key.open("v1.not-base64!.{}"), Err(Unsealed::Forged));
        assert_eq!(format!("{key:?}"), "NoticeKey(..)");
    }

    #[test]
    fn old_and_future_notices_are_stale() {
        let now = SystemTime::now();
        let ms = now.duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
        assert_eq!(check_age(ms - 1_000, now), Ok(()));
        assert_eq!(check_age(ms - 31_000, now), Err(Unsealed::Stale));
        assert_eq!(check_age(ms + 31_000, now), Err(Unsealed::Stale));
        assert_eq!(check_age(i64::MIN, now), Err(Unsealed::Stale));
    }
}
