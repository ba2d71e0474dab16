//! Free text people type (titles, names, descriptions): what a field must hold to be shown to
//! someone else without surprises.

use crate::error::DomainError;

/// Characters that reorder the text around them (bidirectional embeddings, overrides and
/// isolates, and the marks): a title with U+202E shows its words backwards.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Characters that draw nothing: whitespace, controls, and the invisible format and filler
/// characters a title could be made of to look empty.
fn is_invisible(c: char) -> bool {
    c.is_whitespace()
        || c.is_control()
        || is_bidi_control(c)
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{17B4}'
                | '\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{200B}'..='\u{200D}'
                | '\u{2060}'..='\u{2064}'
                | '\u{206A}'..='\u{206F}'
                | '\u{2800}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{E0000}'..='\u{E0FFF}'
        )
}

/// Checks a free-text field: within `min..=max` characters (trimmed, for the minimum); no
/// control characters other than newlines and tabs; no bidirectional controls; and, when it
/// must not be empty, at least one character that draws something.
pub(crate) fn check_text(field: &str, v: &str, min: usize, max: usize) -> Result<(), DomainError> {
    let len = v.trim().chars().count();
    if len < min || v.chars().count() > max {
        return Err(DomainError::invalid(
            field,
            "invalid_length",
            format!("must be {min} to {max} characters"),
        ));
    }
    if v.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return Err(DomainError::invalid(
            field,
            "invalid_characters",
            "must not contain control characters",
        ));
    }
    if v.chars().any(is_bidi_control) {
        return Err(DomainError::invalid(
            field,
            "invalid_characters",
            "must not contain bidirectional control characters (U+202A-U+202E, U+2066-U+2069, \
             U+200E, U+200F, U+061C)",
        ));
    }
    if min > 0 && v.chars().all(is_invisible) {
        return Err(DomainError::invalid(
            field,
            "invalid_characters",
            "must contain at least one visible character",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_must_show_something_and_cannot_reorder_text() {
        for bad in [
            "\u{200B}\u{200B}",
            "\u{3164}",
            " \u{FEFF} ",
            "\u{2800}\u{2800}",
            "Spring \u{202E}sale",
            "a\u{2066}b",
            "\u{00AD}",
        ] {
            let e = check_text("title", bad, 1, 200).unwrap_err();
            assert_eq!(e.code, "invalid_characters", "{bad:?}");
        }
        for good in ["Spring sale", "春季优惠", "Café\u{200D}☕", "עברית", "a\tb"] {
            assert!(check_text("title", good, 1, 200).is_ok(), "{good:?}");
        }
        // An optional field may be empty, but not carry an override.
        assert!(check_text("description", "", 0, 10).is_ok());
        assert!(check_text("description", "\u{202E}", 0, 10).is_err());
    }
}
