//! Promotion codes: a template's shared code (`SPRING24`), or single-use codes generated in
//! bulk from an alphabet without look-alike characters and ending in a check character.
//!
//! The check character is a weighted sum modulo 31 (the alphabet's size, a prime; see
//! [`check_char`]): it catches every single mistyped character and every swap of two adjacent
//! characters, so a typo in a generated code
//! is refused before anything is looked up, and no generated code is one typo away from
//! another valid one.
//!
//! Shared codes are chosen by people, so they carry no check character; they must not have
//! the form of a generated code (see [`SharedCode::parse`]), which keeps the two kinds apart:
//! a code that passes the check can only be a generated one, and one that fails it can only be
//! a shared one.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::DomainError;

/// The characters of generated codes: digits and capitals without `0`, `1`, `I`, `L`, `O`.
pub const ALPHABET: &[u8; 31] = b"23456789ABCDEFGHJKMNPQRSTUVWXYZ";

/// Upper-cases a code as typed and drops the spaces and dashes people add for readability.
pub fn normalize(typed: &str) -> String {
    typed
        .chars()
        .filter(|c| !matches!(c, ' ' | '-' | '\t'))
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

fn index(c: u8) -> Option<usize> {
    ALPHABET.iter().position(|a| *a == c)
}

/// The check character of `body`, or `None` if `body` has a character outside [`ALPHABET`].
///
/// With the characters' alphabet positions `v`, the body's `i`-th character (from 0) weighs
/// `i + 2` and the check character weighs 1, and the weighted sum is 0 modulo 31. Because 31
/// is prime and the weights of a generated code (at most 29 characters) are distinct and
/// non-zero modulo 31, changing one character or swapping two adjacent different ones always
/// breaks the sum.
pub fn check_char(body: &str) -> Option<char> {
    let n = ALPHABET.len();
    let mut sum = 0;
    for (i, c) in body.bytes().enumerate() {
        sum = (sum + (i + 2) % n * index(c)?) % n;
    }
    Some(char::from(ALPHABET[(n - sum) % n]))
}

/// Whether `code` (normalized) is all [`ALPHABET`] and ends in the right check character.
pub fn passes_check(code: &str) -> bool {
    match code.len().checked_sub(1) {
        Some(cut) if cut > 0 && code.is_char_boundary(cut) => {
            let (body, last) = code.split_at(cut);
            check_char(body).is_some_and(|c| last.starts_with(c))
        }
        _ => false,
    }
}

/// Appends the check character to `body` (all [`ALPHABET`] characters).
pub fn with_check(body: &str) -> Option<String> {
    check_char(body).map(|c| format!("{body}{c}"))
}

/// A code as a user typed it, normalized and of a plausible shape: 4 to 40 letters and digits.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TypedCode(String);

impl TypedCode {
    pub fn parse(typed: &str) -> Result<Self, DomainError> {
        let code = normalize(typed);
        if !(4..=40).contains(&code.len()) || !code.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(DomainError::invalid(
                "code",
                "invalid_code",
                "codes are 4 to 40 letters and digits",
            ));
        }
        Ok(TypedCode(code))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this can be a generated code (it passes the check character); otherwise it
    /// can only be a shared one.
    pub fn is_generated_form(&self) -> bool {
        passes_check(&self.0)
    }
}

/// A template's shared code: 4 to 32 letters and digits (stored upper-case), chosen by the
/// merchant and not of a generated code's form.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(try_from = "String", into = "String")]
#[schema(value_type = String, example = "SPRING24")]
pub struct SharedCode(String);

impl SharedCode {
    pub fn parse(s: &str) -> Result<Self, DomainError> {
        let code = normalize(s);
        if !(4..=32).contains(&code.len()) || !code.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(DomainError::invalid(
                "code",
                "invalid_code",
                "a shared code is 4 to 32 letters and digits",
            ));
        }
        if passes_check(&code) {
            // One code in 31 of generated-code characters happens to end in its own check
            // character; keeping the kinds apart lets a redemption know where to look.
            return Err(DomainError::invalid(
                "code",
                "code_looks_generated",
                "this code has the form of a generated single-use code; change its last character",
            ));
        }
        Ok(SharedCode(code))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for SharedCode {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        SharedCode::parse(&s).map_err(|e| e.message)
    }
}

impl From<SharedCode> for String {
    fn from(c: SharedCode) -> String {
        c.0
    }
}

/// What a merchant asks for when generating single-use codes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CodeBatchDraft {
    /// How many codes, 1 to 1,000,000.
    pub count: u32,
    /// Put before every code: 0 to 8 characters of the code alphabet
    /// (`23456789ABCDEFGHJKMNPQRSTUVWXYZ`).
    #[serde(default)]
    pub prefix: String,
    /// Random characters per code, 6 to 20 (the check character comes on top).
    #[serde(default = "default_length")]
    pub length: u32,
}

fn default_length() -> u32 {
    10
}

impl CodeBatchDraft {
    /// `count` codes of `prefix`, of the default length.
    pub fn new(count: u32, prefix: String) -> Self {
        CodeBatchDraft {
            count,
            prefix,
            length: default_length(),
        }
    }
}

/// A validated [`CodeBatchDraft`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeBatchSpec {
    count: u32,
    prefix: String,
    length: u32,
}

impl CodeBatchSpec {
    pub const MAX_COUNT: u32 = 1_000_000;

    pub fn count(&self) -> u32 {
        self.count
    }
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
    pub fn length(&self) -> u32 {
        self.length
    }
}

impl TryFrom<CodeBatchDraft> for CodeBatchSpec {
    type Error = DomainError;

    fn try_from(d: CodeBatchDraft) -> Result<Self, DomainError> {
        if !(1..=Self::MAX_COUNT).contains(&d.count) {
            return Err(DomainError::invalid(
                "count",
                "invalid_value",
                format!("count must be from 1 to {}", Self::MAX_COUNT),
            ));
        }
        let prefix = d.prefix.to_ascii_uppercase();
        if let Some(c) = prefix
            .chars()
            .find(|c| !c.is_ascii() || index(*c as u8).is_none())
        {
            return Err(DomainError::invalid(
                "prefix",
                "invalid_value",
                format!(
                    "{c:?} cannot be in a code (codes use 23456789ABCDEFGHJKMNPQRSTUVWXYZ: \
                     no 0, 1, I, L or O, which read alike)"
                ),
            ));
        }
        if prefix.len() > 8 {
            return Err(DomainError::invalid(
                "prefix",
                "invalid_value",
                format!(
                    "a prefix is at most 8 characters; this one has {}",
                    prefix.len()
                ),
            ));
        }
        if !(6..=20).contains(&d.length) {
            return Err(DomainError::invalid(
                "length",
                "invalid_value",
                "length must be from 6 to 20",
            ));
        }
        // At least a million unused codes for every one issued, so guessing one is hopeless
        // and drawing fresh codes never runs long.
        let space = 31f64.powi(d.length as i32);
        if space < f64::from(d.count) * 1e6 {
            return Err(DomainError::invalid(
                "length",
                "too_few_codes",
                "length is too short for that many codes to stay unguessable; make it longer",
            ));
        }
        Ok(CodeBatchSpec {
            count: d.count,
            prefix,
            length: d.length,
        })
    }
}

#[cfg(test)]
mod props;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn body() -> impl Strategy<Value = String> {
        proptest::collection::vec(0..ALPHABET.len(), 3..28)
            .prop_map(|v| v.into_iter().map(|i| char::from(ALPHABET[i])).collect())
    }

    #[test]
    fn normalizing_drops_separators_and_case() {
        assert_eq!(normalize(" ab-cd 2345 "), "ABCD2345");
        assert!(TypedCode::parse("ab").is_err());
        assert!(TypedCode::parse("abc!def").is_err());
        assert_eq!(TypedCode::parse("spring-24").unwrap().as_str(), "SPRING24");
    }

    #[test]
    fn shared_codes_never_look_generated() {
        assert_eq!(SharedCode::parse("spring24").unwrap().as_str(), "SPRING24");
        let generated = with_check("SPRNG2").unwrap();
        let e = SharedCode::parse(&generated).unwrap_err();
        assert_eq!(e.code, "code_looks_generated");
        assert!(SharedCode::parse("abc").is_err());
        assert!(SharedCode::parse(&"A".repeat(33)).is_err());
    }

    #[test]
    fn batch_specs_bound_count_prefix_and_length() {
        let d = |count, prefix: &str, length| CodeBatchDraft {
            count,
            prefix: prefix.into(),
            length,
        };
        assert!(CodeBatchSpec::try_from(d(10, "sp", 8)).is_ok());
        assert_eq!(
            CodeBatchSpec::try_from(d(10, "sp", 8)).unwrap().prefix(),
            "SP"
        );
        assert_eq!(
            CodeBatchSpec::try_from(d(0, "", 8))
                .unwrap_err()
                .field
                .as_deref(),
            Some("count")
        );
        assert_eq!(
            CodeBatchSpec::try_from(d(10, "O0", 8))
                .unwrap_err()
                .field
                .as_deref(),
            Some("prefix")
        );
        assert_eq!(
            CodeBatchSpec::try_from(d(10, "", 5))
                .unwrap_err()
                .field
                .as_deref(),
            Some("length")
        );
        assert_eq!(
            CodeBatchSpec::try_from(d(1_000_000, "", 6))
                .unwrap_err()
                .code,
            "too_few_codes"
        );
        assert!(CodeBatchSpec::try_from(d(1_000_000, "", 10)).is_ok());
    }

    proptest! {
        #[test]
        fn generated_codes_pass_their_check(b in body()) {
            let code = with_check(&b).unwrap();
            prop_assert!(passes_check(&code));
            prop_assert!(TypedCode::parse(&code.to_lowercase()).unwrap().is_generated_form());
        }

        #[test]
        fn any_single_substitution_is_caught(b in body(), pos in any::<prop::sample::Index>(), to in 0..ALPHABET.len()) {
            let code = with_check(&b).unwrap().into_bytes();
            let p = pos.index(code.len());
            prop_assume!(code[p] != ALPHABET[to]);
            let mut typo = code.clone();
            typo[p] = ALPHABET[to];
            prop_assert!(!passes_check(std::str::from_utf8(&typo).unwrap()));
        }

        #[test]
        fn any_adjacent_swap_is_caught(b in body(), pos in any::<prop::sample::Index>()) {
            let code = with_check(&b).unwrap().into_bytes();
            prop_assume!(code.len() >= 2);
            let p = pos.index(code.len() - 1);
            prop_assume!(code[p] != code[p + 1]);
            let mut typo = code.clone();
            typo.swap(p, p + 1);
            prop_assert!(!passes_check(std::str::from_utf8(&typo).unwrap()));
        }

        #[test]
        fn parsing_never_panics(s in ".{0,64}") {
            let _ = TypedCode::parse(&s);
            let _ = SharedCode::parse(&s);
            let _ = passes_check(&s);
        }
    }
}
