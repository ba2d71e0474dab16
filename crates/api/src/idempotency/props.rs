//! Properties of the `Idempotency-Key` header parser, [`key`]: any header bytes, accepted
//! exactly when they are 1 to 255 visible ASCII characters, and scoped so that two callers'
//! keys never meet.
//!
//! These stand in for cargo-fuzz targets (issue 6, item 9): cargo-fuzz needs a nightly
//! toolchain, which CI does not have, so the parsers of outside input are driven by proptest
//! under plain `cargo test` instead.

use coupond_domain::{MerchantId, UserId};
use proptest::prelude::*;

use super::*;

const ROUTE: &str = "POST /v1/templates/{id}/claims";

/// Bytes a header value can hold (anything but controls other than tab, and DEL), biased
/// towards visible ASCII and towards lengths around the limit of 255.
fn header_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        8 => 0x21u8..=0x7e,
        1 => Just(b' '),
        1 => Just(b'\t'),
        1 => 0x80u8..=0xff,
    ];
    prop_oneof![
        prop::collection::vec(byte.clone(), 0..40),
        prop::collection::vec(byte, 250..=260),
        prop::collection::vec(0x21u8..=0x7e, 0..=300),
    ]
}

fn principal() -> impl Strategy<Value = Principal> {
    prop_oneof![
        Just(Principal::Platform),
        Just(Principal::Service(1)),
        (1i64..=5).prop_map(|m| Principal::Merchant(MerchantId::new(m).unwrap())),
        "[a-z0-9_.:@-]{1,8}".prop_map(|u| Principal::User(UserId::parse(&u).unwrap())),
    ]
}

fn headers_with(value: HeaderValue) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("idempotency-key", value);
    h
}

fn accepted(bytes: &[u8]) -> bool {
    (1..=255).contains(&bytes.len()) && bytes.iter().all(|b| (0x21..=0x7e).contains(b))
}

proptest! {
    #[test]
    fn keys_are_accepted_iff_visible_ascii(
        bytes in header_bytes(),
        p in principal(),
        asked in any::<String>(),
    ) {
        let value = HeaderValue::from_bytes(&bytes).unwrap();
        match key(&headers_with(value), &p, ROUTE, &asked) {
            Ok(Some(k)) => {
                prop_assert!(accepted(&bytes));
                let text = std::str::from_utf8(&bytes).unwrap();
                let scope = match &p {
                    Principal::User(u) => format!("user:{u}"),
                    Principal::Merchant(m) => format!("merchant:{m}"),
                    Principal::Platform => "platform".to_owned(),
                    Principal::Service(_) => "service".to_owned(),
                };
                prop_assert_eq!(k.key, format!("{scope}\n{ROUTE}\n{text}"));
                let fingerprint: [u8; 32] = Sha256::digest(asked.as_bytes()).into();
                prop_assert_eq!(k.fingerprint, fingerprint);
            }
            Ok(None) => prop_assert!(false, "the header is there"),
            Err(e) => {
                prop_assert!(!accepted(&bytes));
                prop_assert!(matches!(
                    &e,
                    ApiError::BadRequest { code: "invalid_header", field: Some(f), .. }
                        if f == "Idempotency-Key"
                ), "{:?}", e);
            }
        }
    }

    /// Raw bytes off the wire: whatever makes a header value is answered as above.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        match HeaderValue::from_bytes(&bytes) {
            Ok(value) => {
                let r = key(&headers_with(value), &Principal::Service(1), ROUTE, "");
                prop_assert_eq!(r.is_ok(), accepted(&bytes));
            }
            Err(_) => prop_assert!(!accepted(&bytes)),
        }
    }

    /// Different callers, or different keys, never share a stored key.
    #[test]
    fn scoped_keys_never_collide(
        (p1, k1) in (principal(), "[!-~]{1,12}"),
        (p2, k2) in (principal(), "[!-~]{1,12}"),
    ) {
        let stored = |p: &Principal, k: &str| {
            key(&headers_with(HeaderValue::from_str(k).unwrap()), p, ROUTE, "")
                .unwrap()
                .unwrap()
                .key
        };
        prop_assert_eq!(stored(&p1, &k1) == stored(&p2, &k2), p1 == p2 && k1 == k2);
    }
}

#[test]
fn no_header_is_no_key_and_the_edges_are_exact() {
    assert!(key(&HeaderMap::new(), &Principal::Platform, ROUTE, "")
        .unwrap()
        .is_none());
    let at = |k: &str| {
        key(
            &headers_with(HeaderValue::from_str(k).unwrap()),
            &Principal::Platform,
            ROUTE,
            "",
        )
    };
    assert!(at(&"k".repeat(255)).unwrap().is_some());
    assert!(at(&"k".repeat(256)).is_err());
    assert!(at("").is_err());
    assert!(at("a b").is_err());
    assert!(at("~!").unwrap().is_some());
}
