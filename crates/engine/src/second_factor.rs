//! The operators' optional second factor: RFC 6238 one-time codes (SHA-1, 6 digits, 30-second
//! steps, what every authenticator app reads), computed by `totp-rs` at the injected clock's
//! time. A code is accepted in its step and the one on either side (a phone's clock a little
//! off); the store remembers the last step used, so one code signs in once.

use coupond_domain::Timestamp;
use totp_rs::{Algorithm, Secret, TOTP};

/// Seconds per step.
const STEP: u64 = 30;
/// Bytes of a new secret (160 bits, RFC 4226's recommendation).
const SECRET_BYTES: usize = 20;

/// A fresh random secret, base32 (what a person types into an app, or the app reads from the
/// otpauth link).
pub fn new_secret() -> String {
    let mut raw = [0u8; SECRET_BYTES];
    rand::fill(&mut raw);
    Secret::Raw(raw.to_vec()).to_encoded().to_string()
}

/// The `otpauth://` link an authenticator app adds the account from.
pub fn otpauth_url(email: &str, secret: &str) -> String {
    let label: String = email
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    format!("otpauth://totp/coupond:{label}?secret={secret}&issuer=coupond&digits=6&period=30")
}

fn totp(secret: &str) -> Option<TOTP> {
    let bytes = Secret::Encoded(secret.to_owned()).to_bytes().ok()?;
    TOTP::new(Algorithm::SHA1, 6, 1, STEP, bytes).ok()
}

/// Whether `secret` is a base32 secret of at least 128 bits.
pub fn valid_secret(secret: &str) -> bool {
    secret.len() <= 64 && totp(secret).is_some()
}

/// The time step of `code` for `secret` at `now` (that step or one on either side), or `None`
/// if it is not a current code.
pub fn matching_step(secret: &str, code: &str, now: Timestamp) -> Option<i64> {
    let code = code.trim();
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let totp = totp(secret)?;
    let secs = u64::try_from(now.unix_micros() / 1_000_000).ok()?;
    let step = secs / STEP;
    [step.saturating_sub(1), step, step + 1]
        .into_iter()
        .find(|s| totp.generate(s * STEP) == code)
        .and_then(|s| i64::try_from(s).ok())
}

/// The code of `secret` at `now` (for tests and the demo).
pub fn code_at(secret: &str, now: Timestamp) -> Option<String> {
    let secs = u64::try_from(now.unix_micros() / 1_000_000).ok()?;
    Some(totp(secret)?.generate(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_unix_micros(secs * 1_000_000).unwrap()
    }

    #[test]
    fn rfc_6238_test_vector() {
        // RFC 6238 appendix B, SHA-1, the secret "12345678901234567890", 59 s: 94287082
        // (8 digits; the 6-digit code is its last six).
        let secret = Secret::Raw(b"12345678901234567890".to_vec())
            .to_encoded()
            .to_string();
        assert_eq!(code_at(&secret, at(59)).as_deref(), Some("287082"));
        assert_eq!(matching_step(&secret, "287082", at(59)), Some(1));
    }

    #[test]
    fn codes_hold_one_step_either_side_and_nothing_else() {
        let secret = new_secret();
        assert!(valid_secret(&secret));
        let code = code_at(&secret, at(3_000)).unwrap();
        assert_eq!(matching_step(&secret, &code, at(3_000)), Some(100));
        assert_eq!(matching_step(&secret, &code, at(3_029)), Some(100));
        assert_eq!(matching_step(&secret, &code, at(2_975)), Some(100));
        assert_eq!(matching_step(&secret, &code, at(3_065)), None);
        for bad in ["", "12345", "1234567", "abcdef"] {
            assert_eq!(matching_step(&secret, bad, at(3_000)), None, "{bad}");
        }
        assert!(!valid_secret("SHORT"));
        assert!(!valid_secret("not base32 at all!"));
    }

    #[test]
    fn the_link_names_the_account_escaped() {
        let url = otpauth_url("ada+ops@example.com", "ABC");
        assert_eq!(
            url,
            "otpauth://totp/coupond:ada%2Bops%40example.com?secret=ABC&issuer=coupond&digits=6&period=30"
        );
    }
}
