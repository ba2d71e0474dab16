//! Multi-row statements on the claim writer's connection, in power-of-two sizes.
//!
//! One multi-row `INSERT` costs SQLite much less than as many single-row ones (its cursors on
//! the table and each index are opened once, not per row), but a statement per batch size
//! would be parsed again for almost every batch. So `n` rows go as chunks of 256, 128, ... 1
//! rows (at most 8 below 256 and as many of 256 as it takes), each size prepared once and kept in the connection's cache.

use coupond_store::StoreResult;
use rusqlite::types::Value as Sql;
use rusqlite::Connection;

use crate::writer::sql_err;

/// The most rows in one statement: 256 rows of 9 values stay far below SQLite's limit of
/// 32,766 bound values.
const MAX_ROWS: usize = 256;

/// The sizes `n` rows are cut into, largest first.
fn chunks(mut n: usize) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if n == 0 {
            return None;
        }
        let k = if n >= MAX_ROWS {
            MAX_ROWS
        } else {
            1 << n.ilog2()
        };
        n -= k;
        Some(k)
    })
}

/// `head VALUES row, row, ... tail` with `k` rows.
fn text(head: &str, row: &str, tail: &str, k: usize) -> String {
    let mut s = String::with_capacity(head.len() + tail.len() + 8 + k * (row.len() + 2));
    s.push_str(head);
    s.push_str(" VALUES ");
    for i in 0..k {
        if i > 0 {
            s.push_str(", ");
        }
        s.push_str(row);
    }
    s.push(' ');
    s.push_str(tail);
    s
}

/// A multi-row statement's shape: `head`, one `row` of `?` placeholders, `tail`.
pub(crate) type Shape<'a> = (&'a str, &'a str, &'a str);

/// Runs `head VALUES row, ... tail` over `values` (`width` per row, row after row), a chunk
/// per statement; the rows changed, summed.
pub(crate) fn insert(
    c: &Connection,
    shape: Shape<'_>,
    width: usize,
    values: &[Sql],
) -> StoreResult<usize> {
    run(c, shape, width, values, &[], None)
}

/// As [`insert`], for a `tail` ending in `RETURNING`: `read` sees each row returned. The
/// `tail`'s own `?` placeholders take `extra`, bound after each chunk's rows.
pub(crate) fn insert_returning(
    c: &Connection,
    shape: Shape<'_>,
    width: usize,
    values: &[Sql],
    extra: &[Sql],
    mut read: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<()>,
) -> StoreResult<usize> {
    run(c, shape, width, values, extra, Some(&mut read))
}

type Read<'r> = &'r mut dyn FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<()>;

fn run(
    c: &Connection,
    (head, row, tail): Shape<'_>,
    width: usize,
    values: &[Sql],
    extra: &[Sql],
    mut read: Option<Read<'_>>,
) -> StoreResult<usize> {
    let mut changed = 0;
    let mut at = 0;
    for k in chunks(values.len() / width) {
        let mut st = c
            .prepare_cached(&text(head, row, tail, k))
            .map_err(sql_err)?;
        let args = rusqlite::params_from_iter(values[at..at + k * width].iter().chain(extra));
        match read.as_mut() {
            Some(read) => {
                let mut rows = st.query(args).map_err(sql_err)?;
                while let Some(r) = rows.next().map_err(sql_err)? {
                    read(r).map_err(sql_err)?;
                    changed += 1;
                }
            }
            None => changed += st.execute(args).map_err(sql_err)?,
        }
        at += k * width;
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_every_row_in_few_sizes() {
        for n in 0..2_000 {
            let sizes: Vec<usize> = chunks(n).collect();
            assert_eq!(sizes.iter().sum::<usize>(), n);
            assert!(sizes.iter().all(|k| k.is_power_of_two() && *k <= MAX_ROWS));
            assert!(sizes.windows(2).all(|w| w[0] >= w[1]));
            assert!(sizes.iter().filter(|k| **k < MAX_ROWS).count() <= 8);
        }
    }

    #[test]
    fn rows_land_and_returning_rows_are_read() {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch("CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT)")
            .unwrap();
        let values: Vec<Sql> = (0..700)
            .flat_map(|i| [Sql::Integer(i), Sql::Text(format!("v{i}"))])
            .collect();
        let shape = ("INSERT INTO t (a, b)", "(?, ?)", "");
        assert_eq!(insert(&c, shape, 2, &values).unwrap(), 700);
        let sum: i64 = c
            .query_row("SELECT SUM(a) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(sum, (0..700).sum::<i64>());

        let again: Vec<Sql> = (695..705)
            .flat_map(|i| [Sql::Integer(i), Sql::Text("w".into())])
            .collect();
        let shape = (
            "INSERT INTO t (a, b)",
            "(?, ?)",
            "ON CONFLICT DO UPDATE SET b = 'x' WHERE a < ? RETURNING a",
        );
        let mut new = Vec::new();
        let n = insert_returning(&c, shape, 2, &again, &[Sql::Integer(698)], |r| {
            new.push(r.get::<_, i64>(0)?);
            Ok(())
        })
        .unwrap();
        // 695..=697 updated (below 698), 698 and 699 left, 700..705 inserted.
        assert_eq!(n, 8);
        new.sort();
        assert_eq!(new, vec![695, 696, 697, 700, 701, 702, 703, 704]);
    }
}
