//! The single error type of domain rules.

use std::fmt;

/// Whether a rule failed because the input is wrong (the caller must change it) or because the
/// state of the world does not allow it now (the same input may succeed at another time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The input breaks a rule: maps to 422.
    Invalid,
    /// The input is fine but the current state forbids it: maps to 409.
    State,
}

/// A broken rule: which field, a stable machine code, and a human message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainError {
    pub kind: ErrorKind,
    /// JSON path of the offending field (`value.amount`, `claim_window`), when there is one.
    pub field: Option<String>,
    /// Stable machine code, documented in the API; never changes meaning once released.
    pub code: &'static str,
    pub message: String,
    /// Further invalid fields found with this one, each independent of the others, so a
    /// caller hears of all of them at once (see [`Findings`]).
    pub also: Vec<DomainError>,
}

impl DomainError {
    /// An invalid input on `field`.
    pub fn invalid(field: &str, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Invalid,
            field: Some(field.to_owned()),
            code,
            message: message.into(),
            also: Vec::new(),
        }
    }

    /// A state conflict (`activity_frozen`, `not_editable`, ...), optionally naming a field.
    pub fn state(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::State,
            field: None,
            code,
            message: message.into(),
            also: Vec::new(),
        }
    }

    /// Prefixes the field path, so a nested rule reports `claim_window.end` rather than `end`.
    #[must_use]
    pub fn within(mut self, parent: &str) -> Self {
        self.field = Some(match self.field.take() {
            Some(f) if !f.is_empty() => format!("{parent}.{f}"),
            _ => parent.to_owned(),
        });
        self.also = std::mem::take(&mut self.also)
            .into_iter()
            .map(|e| e.within(parent))
            .collect();
        self
    }
}

/// The checks of a draft's fields that do not depend on each other, run all before answering:
/// the first refusal is the error, the others ride along in its `also`.
#[derive(Debug, Default)]
pub struct Findings(Vec<DomainError>);

impl Findings {
    /// Keeps `result`'s error, if any (with those it already carried).
    pub fn check<T>(&mut self, result: Result<T, DomainError>) -> Option<T> {
        match result {
            Ok(v) => Some(v),
            Err(mut e) => {
                let also = std::mem::take(&mut e.also);
                self.0.push(e);
                self.0.extend(also);
                None
            }
        }
    }

    /// `Ok` when every check passed, else the first refusal carrying the rest.
    pub fn done(self) -> Result<(), DomainError> {
        let mut all = self.0.into_iter();
        match all.next() {
            None => Ok(()),
            Some(mut first) => {
                first.also = all.collect();
                Err(first)
            }
        }
    }
}

impl fmt::Display for DomainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{field}: {} ({})", self.message, self.code),
            None => write!(f, "{} ({})", self.message, self.code),
        }
    }
}

impl std::error::Error for DomainError {}
