//! The unsubscribe link: a token naming a user and a channel, signed with a key derived from
//! the service's secret, so it works without signing in and cannot be made for someone else.
//! It does not expire: a link in a year-old email must still work.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use coupond_domain::messaging::Channel;
use coupond_domain::UserId;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Bytes of the signature kept in a token (128 bits).
const MAC_BYTES: usize = 16;

/// Makes and checks unsubscribe tokens.
#[derive(Clone)]
pub struct Unsubscribe {
    key: [u8; 32],
    /// Where the links point: the API's public root (`https://coupons.example.com`).
    public_url: String,
}

impl std::fmt::Debug for Unsubscribe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unsubscribe")
            .field("public_url", &self.public_url)
            .finish_non_exhaustive()
    }
}

impl Unsubscribe {
    /// Derives its key from `secret` (the service's signing secret) under its own label, so a
    /// token is good for nothing else.
    pub fn new(secret: &[u8], public_url: &str) -> Self {
        let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes any key length");
        mac.update(b"coupond unsubscribe v1");
        Unsubscribe {
            key: mac.finalize().into_bytes().into(),
            public_url: public_url.trim_end_matches('/').to_owned(),
        }
    }

    fn mac(&self, user: &UserId, channel: Channel) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes any key length");
        mac.update(user.as_str().as_bytes());
        mac.update(b"\n");
        mac.update(channel.as_str().as_bytes());
        mac
    }

    /// The token for `user` and `channel`: `<user, base64url>.<channel>.<signature>`.
    pub fn token(&self, user: &UserId, channel: Channel) -> String {
        let sig = self.mac(user, channel).finalize().into_bytes();
        format!(
            "{}.{}.{}",
            URL_SAFE_NO_PAD.encode(user.as_str()),
            channel.as_str(),
            URL_SAFE_NO_PAD.encode(&sig[..MAC_BYTES])
        )
    }

    /// The link for `user` and `channel`.
    pub fn link(&self, user: &UserId, channel: Channel) -> String {
        format!(
            "{}/unsubscribe?token={}",
            self.public_url,
            self.token(user, channel)
        )
    }

    /// The user and channel `token` names, if it is one this service signed.
    pub fn check(&self, token: &str) -> Option<(UserId, Channel)> {
        if token.len() > 1024 {
            return None;
        }
        let mut parts = token.split('.');
        let (user, channel, sig) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        let user =
            UserId::parse(std::str::from_utf8(&URL_SAFE_NO_PAD.decode(user).ok()?).ok()?).ok()?;
        let channel = Channel::parse(channel)?;
        let sig = URL_SAFE_NO_PAD.decode(sig).ok()?;
        self.mac(&user, channel).verify_truncated_left(&sig).ok()?;
        (sig.len() == MAC_BYTES).then_some((user, channel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_its_user_and_channel_and_nothing_else() {
        let u = Unsubscribe::new(b"secret", "https://c.example/");
        let user = UserId::parse("u-1").unwrap();
        let t = u.token(&user, Channel::Email);
        assert_eq!(u.check(&t), Some((user.clone(), Channel::Email)));
        assert!(u
            .link(&user, Channel::Email)
            .starts_with("https://c.example/unsubscribe?token="));
        // Another channel, another user, another key, a cut signature: refused.
        let forged = t.replace(".email.", ".sms.");
        assert_eq!(u.check(&forged), None);
        let other = Unsubscribe::new(b"other", "https://c.example");
        assert_eq!(other.check(&t), None);
        assert_eq!(u.check(&t[..t.len() - 2]), None);
        assert_eq!(u.check("a.b"), None);
        let them = u.token(&UserId::parse("u-2").unwrap(), Channel::Email);
        let mixed = format!(
            "{}.{}",
            t.split('.').next().unwrap(),
            them.split_once('.').unwrap().1
        );
        assert_eq!(u.check(&mixed), None);
    }
}
