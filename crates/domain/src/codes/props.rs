//! Properties of the promotion-code parsers: [`normalize`], the check character,
//! [`TypedCode`], [`SharedCode`] and [`CodeBatchSpec`].
//!
//! These stand in for cargo-fuzz targets (issue 6, item 9): cargo-fuzz needs a nightly
//! toolchain, which CI does not have, so the parsers of outside input are driven by proptest
//! under plain `cargo test` instead: arbitrary text (any unicode, control characters, very
//! long strings) as well as near misses of valid codes.

use proptest::prelude::*;

use super::*;

/// Text as it may arrive in a path segment or a JSON field.
fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => any::<String>(),
        3 => "[a-zA-Z0-9 \t-]{0,48}",
        2 => "[2-9A-Z]{0,44}",
        1 => "[\\x00-\\x1f\\x7f\\u{80}-\\u{10ffff}]{0,16}",
        1 => prop::collection::vec(any::<char>(), 0..20_000)
            .prop_map(|v| v.into_iter().collect::<String>()),
    ]
}

fn alphabet_string(len: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(ALPHABET.to_vec()), len)
        .prop_map(|v| v.into_iter().map(char::from).collect())
}

/// A code as the generator makes them: a prefix of 0 to 8 characters, 6 to 20 random ones,
/// and the check character (see [`CodeBatchSpec`]).
fn generated_code() -> impl Strategy<Value = String> {
    (alphabet_string(0..=8), alphabet_string(6..=20))
        .prop_map(|(prefix, body)| with_check(&format!("{prefix}{body}")).unwrap())
}

/// `code` as a person might type it: some letters in lower case, spaces, tabs and dashes
/// between characters and around the whole.
fn decorated(code: String) -> impl Strategy<Value = String> {
    let n = code.len();
    (
        prop::collection::vec(any::<bool>(), n),
        prop::collection::vec(
            prop::sample::select(vec!["", "", "", " ", "-", "\t", " - "]),
            n + 1,
        ),
    )
        .prop_map(move |(lower, seps)| {
            let mut typed = String::new();
            for (i, c) in code.chars().enumerate() {
                typed.push_str(seps[i]);
                typed.push(if lower[i] { c.to_ascii_lowercase() } else { c });
            }
            typed.push_str(seps[n]);
            typed
        })
}

fn shape_ok(code: &str, max: usize) -> bool {
    (4..=max).contains(&code.len()) && code.bytes().all(|b| b.is_ascii_alphanumeric())
}

proptest! {
    #[test]
    fn normalizing_is_idempotent_and_drops_only_separators_and_case(s in any_text()) {
        let n = normalize(&s);
        prop_assert_eq!(normalize(&n), n.clone());
        prop_assert!(!n.contains([' ', '-', '\t']));
        prop_assert!(!n.bytes().any(|b| b.is_ascii_lowercase()));
        let kept: String = s.chars().filter(|c| !matches!(c, ' ' | '-' | '\t')).collect();
        prop_assert!(n.eq_ignore_ascii_case(&kept));
    }

    #[test]
    fn typed_codes_are_exactly_the_plausible_shapes(s in any_text()) {
        let n = normalize(&s);
        match TypedCode::parse(&s) {
            Ok(c) => {
                prop_assert!(shape_ok(&n, 40));
                prop_assert_eq!(c.as_str(), n.as_str());
                // Parsing what it shows gives it back.
                prop_assert_eq!(TypedCode::parse(c.as_str()).unwrap(), c.clone());
                prop_assert_eq!(c.is_generated_form(), passes_check(c.as_str()));
            }
            Err(e) => {
                prop_assert!(!shape_ok(&n, 40));
                prop_assert_eq!(e.code, "invalid_code");
                prop_assert_eq!(e.field.as_deref(), Some("code"));
            }
        }
    }

    #[test]
    fn shared_codes_are_the_plausible_shapes_that_fail_the_check(s in any_text()) {
        let n = normalize(&s);
        match SharedCode::parse(&s) {
            Ok(c) => {
                prop_assert!(shape_ok(&n, 32) && !passes_check(&n));
                prop_assert_eq!(c.as_str(), n.as_str());
                prop_assert_eq!(SharedCode::parse(c.as_str()).unwrap(), c.clone());
                let json = serde_json::to_string(&c).unwrap();
                prop_assert_eq!(serde_json::from_str::<SharedCode>(&json).unwrap(), c.clone());
                prop_assert_eq!(String::from(c.clone()), n);
            }
            Err(e) => {
                let expected = if shape_ok(&n, 32) { "code_looks_generated" } else { "invalid_code" };
                prop_assert_eq!(e.code, expected);
                // The JSON form refuses it too.
                let json = serde_json::to_string(&s).unwrap();
                prop_assert!(serde_json::from_str::<SharedCode>(&json).is_err());
            }
        }
    }

    #[test]
    fn the_check_passes_only_on_alphabet_text(s in any_text()) {
        if passes_check(&s) {
            prop_assert!(s.len() >= 2 && s.bytes().all(|b| ALPHABET.contains(&b)));
            prop_assert_eq!(with_check(&s[..s.len() - 1]), Some(s.clone()));
        }
    }

    #[test]
    fn codes_parse_the_same_however_they_are_typed(
        (code, typed) in "[A-Z0-9]{4,40}".prop_flat_map(|c| (Just(c.clone()), decorated(c)))
    ) {
        prop_assert_eq!(TypedCode::parse(&typed).unwrap(), TypedCode(code.clone()));
        if code.len() <= 32 && !passes_check(&code) {
            prop_assert_eq!(SharedCode::parse(&typed).unwrap(), SharedCode(code));
        }
    }

    #[test]
    fn generated_codes_are_recognised_however_typed(
        (code, typed) in generated_code().prop_flat_map(|c| (Just(c.clone()), decorated(c)))
    ) {
        prop_assert!(code.len() <= 29);
        let parsed = TypedCode::parse(&typed).unwrap();
        prop_assert_eq!(parsed.as_str(), code.as_str());
        prop_assert!(parsed.is_generated_form());
        // A merchant cannot take it as a shared code.
        prop_assert_eq!(SharedCode::parse(&typed).unwrap_err().code, "code_looks_generated");
    }

    /// A mistyped generated code (one character replaced by any other letter or digit, the
    /// look-alikes `0 1 I L O` included) fails the check on its text alone, so it is known not
    /// to be a generated code before anything is looked up.
    #[test]
    fn a_single_substitution_fails_the_check(
        code in generated_code(),
        pos in any::<prop::sample::Index>(),
        to in prop::sample::select(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ".to_vec()),
    ) {
        let mut typo = code.clone().into_bytes();
        let p = pos.index(typo.len());
        prop_assume!(typo[p] != to);
        typo[p] = to;
        let typo = String::from_utf8(typo).unwrap();
        prop_assert!(!passes_check(&typo));
        prop_assert!(!TypedCode::parse(&typo).unwrap().is_generated_form());
        prop_assert!(!TypedCode::parse(&typo.to_lowercase()).unwrap().is_generated_form());
    }

    #[test]
    fn an_adjacent_swap_fails_the_check(code in generated_code(), pos in any::<prop::sample::Index>()) {
        let mut typo = code.into_bytes();
        let p = pos.index(typo.len() - 1);
        prop_assume!(typo[p] != typo[p + 1]);
        typo.swap(p, p + 1);
        prop_assert!(!passes_check(std::str::from_utf8(&typo).unwrap()));
    }

    #[test]
    fn batch_specs_follow_their_rules(
        count in prop_oneof![any::<u32>(), 0u32..=1_000_001, 999_990u32..=1_000_010],
        prefix in prop_oneof!["[2-9a-zA-Z]{0,10}", any::<String>()],
        length in prop_oneof![any::<u32>(), 0u32..=22],
    ) {
        let draft = CodeBatchDraft { count, prefix: prefix.clone(), length };
        let upper = prefix.to_ascii_uppercase();
        // Exact integer arithmetic for the guessing margin: 31^20 fits in a u128.
        let expected_failure = if !(1..=1_000_000).contains(&count) {
            Some(("count", "invalid_value"))
        } else if upper.len() > 8 || !upper.bytes().all(|b| ALPHABET.contains(&b)) {
            Some(("prefix", "invalid_value"))
        } else if !(6..=20).contains(&length) {
            Some(("length", "invalid_value"))
        } else if 31u128.pow(length) < u128::from(count) * 1_000_000 {
            Some(("length", "too_few_codes"))
        } else {
            None
        };
        match (CodeBatchSpec::try_from(draft), expected_failure) {
            (Ok(spec), None) => {
                prop_assert_eq!((spec.count(), spec.prefix(), spec.length()), (count, upper.as_str(), length));
                // Its codes are short enough for the check character's guarantees.
                let code_len = spec.prefix().len() + spec.length() as usize + 1;
                prop_assert!(code_len <= 29);
            }
            (Err(e), Some((field, code))) => {
                prop_assert_eq!(e.field.as_deref(), Some(field));
                prop_assert_eq!(e.code, code);
            }
            (got, expected) => {
                return Err(TestCaseError::fail(format!("got {got:?}, expected failure {expected:?}")));
            }
        }
    }

    #[test]
    fn batch_drafts_from_any_json_never_panic(
        s in prop_oneof![
            any::<String>(),
            (any::<i64>(), "[2-9A-Za-z]{0,10}", any::<i64>())
                .prop_map(|(c, p, l)| format!(r#"{{"count":{c},"prefix":"{p}","length":{l}}}"#)),
            (any::<f64>(), any::<u32>()).prop_map(|(c, l)| format!(r#"{{"count":{c:?},"length":{l}}}"#)),
        ]
    ) {
        if let Ok(d) = serde_json::from_str::<CodeBatchDraft>(&s) {
            let _ = CodeBatchSpec::try_from(d);
        }
    }
}

#[test]
fn huge_and_odd_inputs_are_refused() {
    let huge = "A".repeat(1 << 20);
    assert_eq!(TypedCode::parse(&huge).unwrap_err().code, "invalid_code");
    assert_eq!(SharedCode::parse(&huge).unwrap_err().code, "invalid_code");
    assert!(!passes_check(&huge));
    // Separators do not count towards the length, other characters do.
    assert!(TypedCode::parse(&format!("{}SPRING24", " -".repeat(1 << 16))).is_ok());
    for odd in [
        "",
        "é",
        "\0\0\0\0",
        "ＳＰＲＩＮＧ",
        "spr\u{0}ng24",
        "ab\u{200b}cd",
        "A\u{301}BCD",
    ] {
        assert!(TypedCode::parse(odd).is_err(), "{odd:?}");
        assert!(SharedCode::parse(odd).is_err(), "{odd:?}");
        assert!(!passes_check(odd), "{odd:?}");
    }
}
