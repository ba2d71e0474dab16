//! Scripts: several statements sent as one text, in one round trip, their values written into
//! the text as literals.
//!
//! The claim batch is a handful of statements whose sizes change with the batch: prepared, each
//! size is its own statement to prepare (a round trip, and a parameter definition per value
//! sent back), and each statement is its own round trip. A script is one `COM_QUERY` holding
//! them all; the server runs them in order and stops at the first that fails, so a script that
//! ends in `COMMIT` commits only if every statement before it succeeded.
//!
//! Nothing from a request is ever written into the text as it stands: text is written as a
//! hexadecimal literal with its character set (`_utf8mb4 X'…'`), bytes as `X'…'`, numbers by
//! Rust's formatting of an `i64`. The SQL around them is the program's own.

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

    /// `v` as a `utf8mb4` string: the hexadecimal of its bytes, so no character of it is
    /// read as SQL.
    pub(crate) fn text(&mut self, v: &str) -> &mut Self {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_literals_no_character_of_which_is_sql() {
        let mut s = Script::default();
        s.sql("SELECT ")
            .text("a'; DROP TABLE coupons; --")
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
             X'00FF', -7, NULL;\n"
        );
    }
}
