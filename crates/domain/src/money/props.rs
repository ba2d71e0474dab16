//! Properties of the money and percentage parsers: [`Money`] and [`BasisPoints`] from any
//! `i64`, any JSON text and any JSON value, and the checked arithmetic on what they accept.
//!
//! These stand in for cargo-fuzz targets (issue 6, item 9): cargo-fuzz needs a nightly
//! toolchain, which CI does not have, so the parsers of outside input are driven by proptest
//! under plain `cargo test` instead.

use proptest::prelude::*;
use serde_json::Value;

use super::*;
use crate::coupon::CouponValue;

const BPS_MAX: i64 = 10_000;

/// Any `i64`, with the edges of both ranges well represented.
fn any_i64() -> impl Strategy<Value = i64> {
    prop_oneof![
        any::<i64>(),
        -10i64..=10,
        BPS_MAX - 10..=BPS_MAX + 10,
        MONEY_MAX - 10..=MONEY_MAX + 10,
        Just(i64::MIN),
        Just(i64::MAX),
    ]
}

/// Text of a JSON number, or of something close to one: a sign, leading zeros, fractions,
/// exponents, values past `i64` and `u64`, surrounding whitespace.
fn number_text() -> impl Strategy<Value = String> {
    let integer = prop_oneof![
        Just("0".to_owned()),
        "[1-9][0-9]{0,24}",
        "0[0-9]{1,3}",
        any_i64().prop_map(|v| v.unsigned_abs().to_string()),
        Just(u64::MAX.to_string()),
        Just((u128::from(u64::MAX) + 1).to_string()),
    ];
    (
        any::<bool>(),
        integer,
        prop::option::weighted(0.2, "[0-9]{0,4}"),
        prop::option::weighted(0.2, "[eE][+-]?[0-9]{0,3}"),
        prop::sample::select(vec!["", " ", "\n\t"]),
    )
        .prop_map(|(minus, int, frac, exp, ws)| {
            let mut s = format!("{ws}{}{int}", if minus { "-" } else { "" });
            if let Some(f) = frac {
                s.push('.');
                s.push_str(&f);
            }
            if let Some(e) = exp {
                s.push_str(&e);
            }
            s.push_str(ws);
            s
        })
}

/// The value of `text` if it is a plain non-negative JSON integer (no sign, fraction,
/// exponent or leading zero): the only number form money and percentages accept.
fn plain_integer(text: &str) -> Option<u128> {
    let t = text.trim();
    let canonical = t == "0" || (!t.starts_with('0') && !t.is_empty());
    (canonical && t.bytes().all(|b| b.is_ascii_digit()))
        .then(|| t.parse().ok())
        .flatten()
}

fn in_range(v: u128, max: i64) -> Option<i64> {
    i64::try_from(v).ok().filter(|v| *v <= max)
}

/// Any JSON value a field of money could be given.
fn any_json_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any_i64().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        (0..=MONEY_MAX).prop_map(|v| Value::from(v as f64)),
        any::<String>().prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        Just(Value::Null),
        prop::collection::vec(any_i64(), 0..3).prop_map(Value::from),
    ]
}

proptest! {
    /// The in-place split gives exactly the parts of `split`, whatever the weights (zero,
    /// huge, past i64 products).
    #[test]
    fn split_pairs_is_split(
        total in prop_oneof![0i64..=10_000, 0..=MONEY_MAX],
        weights in prop::collection::vec(prop_oneof![Just(0i64), 0i64..=1_000, 0..=MONEY_MAX], 0..12),
    ) {
        let total = Money::new(total).unwrap();
        let weights: Vec<Money> = weights.into_iter().map(|w| Money::new(w).unwrap()).collect();
        let cap = weights.iter().fold(Money::ZERO, |s, &w| s.saturating_add(w));
        let total = if weights.iter().all(|w| *w == Money::ZERO) { total } else { total.min(cap) };
        let mut pairs: Vec<(usize, Money)> = weights.iter().copied().enumerate().map(|(i, w)| (i + 7, w)).collect();
        total.split_pairs(&mut pairs);
        let want: Vec<(usize, Money)> = total.split(&weights).into_iter().enumerate().map(|(i, p)| (i + 7, p)).collect();
        prop_assert_eq!(pairs, want);
    }

    #[test]
    fn money_accepts_exactly_zero_to_max(v in any_i64()) {
        let ok = (0..=MONEY_MAX).contains(&v);
        match Money::new(v) {
            Ok(m) => {
                prop_assert!(ok);
                prop_assert_eq!(m.minor(), v);
                prop_assert_eq!(i64::from(m), v);
            }
            Err(e) => {
                prop_assert!(!ok);
                prop_assert!(e.contains(&v.to_string()));
            }
        }
        prop_assert_eq!(Money::try_from(v).ok(), Money::new(v).ok());
    }

    #[test]
    fn basis_points_accept_exactly_zero_to_ten_thousand(v in any_i64()) {
        let ok = (0..=BPS_MAX).contains(&v);
        match BasisPoints::new(v) {
            Ok(b) => {
                prop_assert!(ok);
                prop_assert_eq!(i64::from(b.get()), v);
                prop_assert_eq!(i64::from(b), v);
            }
            Err(_) => prop_assert!(!ok),
        }
        prop_assert_eq!(BasisPoints::try_from(v).ok(), BasisPoints::new(v).ok());
    }

    /// JSON numbers: only plain integers in range are read; negative ones, `-0`, fractions
    /// (even `5.0`), exponents, leading zeros and anything past `i64` are refused.
    #[test]
    fn json_numbers_are_read_only_as_plain_integers_in_range(text in number_text()) {
        let plain = plain_integer(&text);
        prop_assert_eq!(
            serde_json::from_str::<Money>(&text).ok().map(Money::minor),
            plain.and_then(|v| in_range(v, MONEY_MAX))
        );
        prop_assert_eq!(
            serde_json::from_str::<BasisPoints>(&text).ok().map(|b| i64::from(b.get())),
            plain.and_then(|v| in_range(v, BPS_MAX))
        );
        // The same inside the values that carry them.
        let percent = format!(r#"{{"kind":"percent_off","bps":{text}}}"#);
        prop_assert_eq!(
            serde_json::from_str::<CouponValue>(&percent).is_ok(),
            plain.and_then(|v| in_range(v, BPS_MAX)).is_some()
        );
        let amount = format!(r#"{{"kind":"amount_off","amount":{text}}}"#);
        prop_assert_eq!(
            serde_json::from_str::<CouponValue>(&amount).is_ok(),
            plain.and_then(|v| in_range(v, MONEY_MAX)).is_some()
        );
    }

    #[test]
    fn json_values_are_read_only_as_integers_in_range(v in any_json_value()) {
        let int = v.as_i64();
        prop_assert_eq!(
            serde_json::from_value::<Money>(v.clone()).ok().map(Money::minor),
            int.filter(|i| (0..=MONEY_MAX).contains(i))
        );
        prop_assert_eq!(
            serde_json::from_value::<BasisPoints>(v.clone()).ok().map(|b| i64::from(b.get())),
            int.filter(|i| (0..=BPS_MAX).contains(i))
        );
    }

    #[test]
    fn arbitrary_json_text_never_panics(s in prop_oneof![any::<String>(), "[-+0-9.eE ,\\[\\]{}\"a-z:]{0,40}"]) {
        if let Ok(m) = serde_json::from_str::<Money>(&s) {
            // Whatever was read is what a plain i64 reading gives, and in range.
            prop_assert_eq!(serde_json::from_str::<i64>(&s).ok(), Some(m.minor()));
            prop_assert!((0..=MONEY_MAX).contains(&m.minor()));
        }
        if let Ok(b) = serde_json::from_str::<BasisPoints>(&s) {
            prop_assert_eq!(serde_json::from_str::<i64>(&s).ok(), Some(i64::from(b.get())));
        }
        let _ = serde_json::from_str::<CouponValue>(&s);
    }

    /// Written as a plain integer (never `5.0`), read back the same.
    #[test]
    fn json_round_trips(v in 0..=MONEY_MAX, b in 0..=BPS_MAX, cap in prop::option::of(1..=MONEY_MAX)) {
        let m = Money::new(v).unwrap();
        let json = serde_json::to_string(&m).unwrap();
        prop_assert_eq!(&json, &v.to_string());
        prop_assert_eq!(serde_json::from_str::<Money>(&json).unwrap(), m);

        let bps = BasisPoints::new(b).unwrap();
        let json = serde_json::to_string(&bps).unwrap();
        prop_assert_eq!(&json, &b.to_string());
        prop_assert_eq!(serde_json::from_str::<BasisPoints>(&json).unwrap(), bps);

        let value = CouponValue::PercentOff { bps, cap: cap.map(|c| Money::new(c).unwrap()) };
        let json = serde_json::to_string(&value).unwrap();
        prop_assert_eq!(serde_json::from_str::<CouponValue>(&json).unwrap(), value);
    }

    /// The arithmetic on accepted amounts, against exact `i128` arithmetic: never a panic,
    /// never a result outside `0..=MONEY_MAX`.
    #[test]
    fn checked_arithmetic_matches_exact_arithmetic(
        a in prop_oneof![0..=MONEY_MAX, 0..=10i64],
        b in prop_oneof![0..=MONEY_MAX, MONEY_MAX - 10..=MONEY_MAX],
        n in any_i64(),
    ) {
        let (ma, mb) = (Money::new(a).unwrap(), Money::new(b).unwrap());
        let (a, b, wide_n) = (i128::from(a), i128::from(b), i128::from(n));
        let max = i128::from(MONEY_MAX);
        let wide = |m: Option<Money>| m.map(|m| i128::from(m.minor()));
        prop_assert_eq!(wide(ma.checked_add(mb)), Some(a + b).filter(|s| *s <= max));
        prop_assert_eq!(i128::from(ma.saturating_add(mb).minor()), (a + b).min(max));
        prop_assert_eq!(i128::from(ma.saturating_sub(mb).minor()), (a - b).max(0));
        prop_assert_eq!(ma.min(mb).minor(), ma.minor().min(mb.minor()));
        prop_assert_eq!(
            wide(ma.checked_mul(n)),
            Some(a * wide_n).filter(|p| n >= 0 && *p <= max)
        );
        prop_assert_eq!(wide(ma.checked_div(n)), (n > 0).then(|| a / wide_n));
    }
}

/// Money and percentages are integers: no float type in the module's code.
#[test]
fn no_float_in_money() {
    let source = include_str!("../money.rs");
    let code = source.split("#[cfg(test)]").next().unwrap();
    for float in [concat!("f", "32"), concat!("f", "64")] {
        assert!(!code.contains(float), "money.rs mentions {float}");
    }
}
