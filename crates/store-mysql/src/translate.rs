//! The two forms of the shared layer's statements MySQL has no direct equivalent for.
//!
//! **Skipping duplicates.** [`Dialect::on_conflict_nothing`] ends an `INSERT` with
//! `ON DUPLICATE KEY UPDATE c = c`, valid SQL that skips the row; but with the
//! `CLIENT_FOUND_ROWS` flag the driver sets, a skipped row still counts as affected, and the
//! shared layer counts what an insert added. Such an insert runs as `INSERT IGNORE` with the
//! clause removed, which counts only the rows added.
//!
//! **`RETURNING`**, which MySQL lacks (MariaDB has it on `INSERT` and `DELETE` only): a
//! statement that ends in `RETURNING cols` runs as its write and then a read of the one row it
//! wrote, by `id`, in the same transaction.
//!
//! - `INSERT INTO t ... RETURNING cols`: the row the insert made is `LAST_INSERT_ID()`'s.
//! - `UPDATE t SET ... WHERE ... RETURNING cols`: `id = LAST_INSERT_ID(id)` joins the `SET`
//!   list, so the driver reports the updated row's id the same way.
//!
//! Only single-row statements on tables keyed by an integer `id` take this path; the few others
//! (orders, leases) are written for MySQL where they are.

/// A statement split for MySQL.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Run this: the statement as written, or as `INSERT IGNORE`.
    Plain(String),
    /// Run `write`; if it wrote a row, read it with `read` and that row's id.
    Returning { write: String, read: String },
}

/// How to run `text` (already in positional form) on MySQL.
pub(crate) fn plan(text: &str) -> Result<Plan, String> {
    let Some(at) = text.rfind("RETURNING ") else {
        return Ok(Plan::Plain(
            skip_duplicates(text).unwrap_or_else(|| text.to_owned()),
        ));
    };
    let (body, cols) = (
        text[..at].trim_end(),
        text[at + "RETURNING ".len()..].trim(),
    );
    let skipping = skip_duplicates(body);
    let body = skipping.as_deref().unwrap_or(body);
    if cols.contains('?') {
        return Err("a RETURNING list with parameters".into());
    }
    let body_start = body.trim_start();
    let insert = body_start
        .strip_prefix("INSERT INTO ")
        .or_else(|| body_start.strip_prefix("INSERT IGNORE INTO "));
    let (write, table) = if let Some(rest) = insert {
        (body_start.to_owned(), first_word(rest))
    } else if let Some(rest) = body_start.strip_prefix("UPDATE ") {
        let table = first_word(rest);
        let at = top_level_where(body_start).ok_or("an UPDATE ... RETURNING without WHERE")?;
        let write = format!(
            "{}, id = LAST_INSERT_ID(id) {}",
            body_start[..at].trim_end(),
            &body_start[at..]
        );
        (write, table)
    } else {
        return Err(format!("RETURNING on {body_start:.20}"));
    };
    Ok(Plan::Returning {
        write,
        read: format!("SELECT {cols} FROM {table} WHERE id = ?"),
    })
}

/// `INSERT INTO ... ON DUPLICATE KEY UPDATE c = c` as `INSERT IGNORE INTO ...`.
fn skip_duplicates(text: &str) -> Option<String> {
    let at = text.rfind(" ON DUPLICATE KEY UPDATE ")?;
    let (col, same) = text[at + " ON DUPLICATE KEY UPDATE ".len()..]
        .trim()
        .split_once(" = ")?;
    let insert = text.trim_start().strip_prefix("INSERT INTO ")?;
    (col == same).then(|| {
        let cut = text.len() - text.trim_start().len();
        format!(
            "INSERT IGNORE INTO {}",
            &insert[..at - cut - "INSERT INTO ".len()]
        )
    })
}

fn first_word(s: &str) -> String {
    s.split(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Where the statement's own `WHERE` starts: the first outside parentheses and quotes.
fn top_level_where(s: &str) -> Option<usize> {
    let (mut depth, mut quoted) = (0i32, false);
    let bytes = s.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'\'' => quoted = !quoted,
            b'(' if !quoted => depth += 1,
            b')' if !quoted => depth -= 1,
            b'W' if !quoted && depth == 0 => {
                let word = s[i..].starts_with("WHERE");
                let before = i == 0 || bytes[i - 1].is_ascii_whitespace();
                let after = bytes.get(i + 5).is_none_or(u8::is_ascii_whitespace);
                if word && before && after {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_without_returning_runs_as_written() {
        assert_eq!(plan("SELECT 1").unwrap(), Plan::Plain("SELECT 1".into()));
    }

    #[test]
    fn an_insert_reads_back_its_row_by_id() {
        let p = plan("\n  INSERT INTO merchants (name) VALUES (?) RETURNING *").unwrap();
        assert_eq!(
            p,
            Plan::Returning {
                write: "INSERT INTO merchants (name) VALUES (?)".into(),
                read: "SELECT * FROM merchants WHERE id = ?".into(),
            }
        );
    }

    #[test]
    fn an_update_reports_its_row_id_before_its_own_where() {
        let p = plan(
            "UPDATE templates SET n = (SELECT x FROM y WHERE z = ?), v = 'WHERE'
             WHERE id = ? AND version = ? RETURNING id, spec",
        )
        .unwrap();
        let Plan::Returning { write, read } = p else {
            panic!("planned as plain")
        };
        assert_eq!(
            write,
            "UPDATE templates SET n = (SELECT x FROM y WHERE z = ?), v = 'WHERE', \
             id = LAST_INSERT_ID(id) WHERE id = ? AND version = ?"
        );
        assert_eq!(read, "SELECT id, spec FROM templates WHERE id = ?");
    }

    #[test]
    fn an_insert_that_skips_duplicates_counts_only_rows_added() {
        assert_eq!(
            plan(" INSERT INTO codes (code) VALUES (?), (?) ON DUPLICATE KEY UPDATE code = code")
                .unwrap(),
            Plan::Plain("INSERT IGNORE INTO codes (code) VALUES (?), (?)".into())
        );
        // An upsert that replaces columns is left as it is.
        let upsert = "INSERT INTO s (k, v) VALUES (?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v)";
        assert_eq!(plan(upsert).unwrap(), Plan::Plain(upsert.into()));
        let Plan::Returning { write, .. } =
            plan("INSERT INTO issuances (k) VALUES (?) ON DUPLICATE KEY UPDATE k = k RETURNING id")
                .unwrap()
        else {
            panic!("planned without its read")
        };
        assert_eq!(write, "INSERT IGNORE INTO issuances (k) VALUES (?)");
    }

    #[test]
    fn other_statements_with_returning_are_refused() {
        assert!(plan("DELETE FROM x WHERE id = ? RETURNING *").is_err());
        assert!(plan("UPDATE x SET a = 1 RETURNING *").is_err());
    }
}
