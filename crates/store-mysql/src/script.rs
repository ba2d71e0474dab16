//! Scripts: several statements sent as one text, in one round trip, their values written into
//! the text as literals.
//!
//! The claim batch is a handful of statements whose sizes change with the batch: prepared, each
//! size is its own statement to prepare (a round trip, and a parameter definition per value
//! sent back), and each statement is its own round trip. A script is one `COM_QUERY` holding
//! them all; the server runs them in order and stops at the first that fails, so a script that
//! ends in `COMMIT` commits only if every statement before it succeeded.
//!
//! Nothing from a request is ever written into the text as it could end a literal: text made
//! only of printable ASCII other than `'` and `\` is written between single quotes as it
//! stands (no character of it means anything inside a string literal, whatever the
//! `sql_mode`), any other text as a hexadecimal literal with its character set
//! (`_utf8mb4 X'…'`); bytes as `X'…'`, numbers by Rust's formatting of an `i64`. The SQL
//! around them is the program's own.
//!
//! Why plain literals at all: a claim's text values (user id, channel, actor, event kind and
//! its JSON body) are all plain ASCII, and in hexadecimal with an introducer they took the
//! server twice the bytes to read, a character-set lookup per value and a conversion; parsing
//! was a fifth of mariadbd's CPU in a flash sale.

use std::fmt::Write as _;

use coupond_domain::Timestamp;
use coupond_store::{StoreError, StoreResult};
use coupond_store_sql::Row;
use futures_util::TryStreamExt;
use sqlx::mysql::MySqlConnection;
use sqlx::{Either, Executor};

use crate::exec::rows;
use crate::rows::db_err;

/// Statements to send as one text.
#[derive(Debug, Default)]
pub(crate) struct Script {
    text: String,
    statements: usize,
}

/// What one statement of a script returned.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// Its rows (a `SELECT`).
    pub(crate) rows: Vec<Row>,
    /// The rows it changed, as the server counts them (a write).
    pub(crate) changed: u64,
    /// The id `LAST_INSERT_ID(…)` was last given, or an insert generated.
    pub(crate) last_id: u64,
}

impl Script {
    /// SQL written by the program, never a request's value.
    pub(crate) fn sql(&mut self, text: &str) -> &mut Self {
        self.text.push_str(text);
        self
    }

    pub(crate) fn int(&mut self, v: i64) -> &mut Self {
        let _ = write!(self.text, "{v}");
        self
    }

    pub(crate) fn time(&mut self, t: Timestamp) -> &mut Self {
        self.int(t.unix_micros())
    }

    /// `v` as a string literal: between single quotes when every byte of it is [`inert`],
    /// else as a `utf8mb4` hexadecimal literal. Either way no character of it is read as SQL.
    pub(crate) fn text(&mut self, v: &str) -> &mut Self {
        if v.bytes().all(inert) {
            self.text.reserve(v.len() + 2);
            self.text.push('\'');
            self.text.push_str(v);
            self.text.push('\'');
            return self;
        }
        self.text.push_str("_utf8mb4 ");
        self.bytes(v.as_bytes())
    }

    pub(crate) fn opt_text(&mut self, v: Option<&str>) -> &mut Self {
        match v {
            Some(v) => self.text(v),
            None => self.sql("NULL"),
        }
    }

    /// `v` as a binary string.
    pub(crate) fn bytes(&mut self, v: &[u8]) -> &mut Self {
        const HEX: &[u8; 16] = b"0123456789ABCDEF";
        self.text.reserve(v.len() * 2 + 3);
        self.text.push_str("X'");
        for b in v {
            self.text.push(HEX[usize::from(b >> 4)] as char);
            self.text.push(HEX[usize::from(b & 15)] as char);
        }
        self.text.push('\'');
        self
    }

    /// `head`, then one parenthesised row per item, written by `row`.
    pub(crate) fn rows<T>(
        &mut self,
        head: &str,
        items: &[T],
        mut row: impl FnMut(&mut Self, &T),
    ) -> &mut Self {
        self.sql(head);
        for (k, item) in items.iter().enumerate() {
            self.sql(if k == 0 { "(" } else { ", (" });
            row(self, item);
            self.sql(")");
        }
        self
    }

    /// Ends the statement being written; its index among the script's outcomes.
    pub(crate) fn end(&mut self) -> usize {
        self.text.push_str(";\n");
        self.statements += 1;
        self.statements - 1
    }

    /// A script of the one statement `text`, the program's own.
    pub(crate) fn one(text: &str) -> Self {
        let mut s = Script::default();
        s.sql(text).end();
        s
    }

    /// The script's text, for tests.
    #[cfg(test)]
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.statements == 0
    }

    /// Runs the script on `conn`: one outcome per statement, in order. The first statement that
    /// fails ends it with that error; the ones before it stay done (in a transaction, until
    /// the caller rolls it back).
    pub(crate) async fn run(&self, conn: &mut MySqlConnection) -> StoreResult<Vec<Outcome>> {
        let mut out = Vec::with_capacity(self.statements);
        if self.is_empty() {
            return Ok(out);
        }
        let mut found = Vec::new();
        let mut results = conn.fetch_many(sqlx::raw_sql(&self.text));
        while let Some(step) = results.try_next().await.map_err(db_err)? {
            match step {
                Either::Right(row) => found.push(row),
                // Each statement ends with its result, a `SELECT` after its rows.
                Either::Left(done) => {
                    out.push(Outcome {
                        rows: rows(&found)?,
                        changed: done.rows_affected(),
                        last_id: done.last_insert_id(),
                    });
                    found.clear();
                }
            }
        }
        if out.len() != self.statements {
            return Err(StoreError::other(format!(
                "a script of {} statements returned {} results",
                self.statements,
                out.len()
            )));
        }
        Ok(out)
    }
}

/// A byte that means nothing but itself inside a single-quoted MySQL string literal, in every
/// `sql_mode` and client character set: printable ASCII except the quote and the backslash
/// (an escape unless `NO_BACKSLASH_ESCAPES`). Control characters and anything past ASCII go
/// in hexadecimal.
fn inert(b: u8) -> bool {
    matches!(b, b' '..=b'~') && b != b'\'' && b != b'\\'
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::Connection;

    #[test]
    fn values_are_literals_no_character_of_which_is_sql() {
        let mut s = Script::default();
        s.sql("SELECT ")
            .text("a'; DROP TABLE coupons; --")
            .sql(", ")
            .text("a\\")
            .sql(", ")
            .bytes(&[0, 255])
            .sql(", ")
            .int(-7)
            .sql(", ")
            .opt_text(None);
        assert_eq!(s.end(), 0);
        assert_eq!(
            s.text,
            "SELECT _utf8mb4 X'61273B2044524F50205441424C4520636F75706F6E733B202D2D', \
             _utf8mb4 X'615C', X'00FF', -7, NULL;\n"
        );
    }

    #[test]
    fn plain_ascii_is_written_as_it_stands_anything_else_in_hexadecimal() {
        let mut s = Script::default();
        s.text("u-1.a:b_c@d")
            .sql(" ")
            .text(r#"{"kind":"coupon.claimed","at":"2026-12-05T08:00:00Z"}"#)
            .sql(" ")
            .text("")
            .sql(" ")
            .text("é")
            .sql(" ")
            .text("a\nb");
        assert_eq!(
            s.text,
            r#"'u-1.a:b_c@d' '{"kind":"coupon.claimed","at":"2026-12-05T08:00:00Z"}' '' _utf8mb4 X'C3A9' _utf8mb4 X'610A62'"#
        );
    }

    /// Every kind of text comes back from the server as it was sent, with and without
    /// `NO_BACKSLASH_ESCAPES` (the mode decides what a backslash means in a quoted literal).
    /// Needs `COUPOND_TEST_MYSQL_URL`; skips without it.
    #[tokio::test]
    async fn texts_come_back_from_the_server_as_sent() {
        let Ok(url) = std::env::var("COUPOND_TEST_MYSQL_URL") else {
            eprintln!("SKIP mysql `texts_come_back_from_the_server_as_sent`: COUPOND_TEST_MYSQL_URL is not set");
            return;
        };
        let texts = [
            "u-1",
            "",
            " ",
            "a'b",
            "a''b",
            "a\\",
            "a\\'",
            "\\'; DROP TABLE x; --",
            "\"x\"",
            "50% off_",
            "/* c */",
            "`t`",
            "line\nbreak\ttab\r",
            "nul\0in",
            "é ü 株 🎟",
            r#"{"user":"u-1","note":"a \"q\""}"#,
            "?",
            "$1",
            "\u{7f}",
        ];
        let mut conn = sqlx::MySqlConnection::connect(&url).await.expect("connect");
        for mode in [
            "ANSI_QUOTES,PIPES_AS_CONCAT",
            "ANSI_QUOTES,NO_BACKSLASH_ESCAPES",
        ] {
            sqlx::raw_sql(&format!("SET SESSION sql_mode = '{mode}'"))
                .execute(&mut conn)
                .await
                .expect("sql_mode");
            for t in texts {
                let mut s = Script::default();
                s.sql("SELECT ").text(t).sql(" AS v");
                s.end();
                let out = s.run(&mut conn).await.expect("run");
                assert_eq!(out[0].rows[0].string("v").expect("v"), t, "{mode}: {t:?}");
            }
        }
    }
}
