//! [`Query`]: a statement and its arguments, written once for every backend.
//!
//! Placeholders are PostgreSQL's `$1`, `$2`, ...: PostgreSQL and SQLite (through sqlx) read
//! them as written, and a backend without numbered placeholders rewrites them
//! ([`Query::positional`]). Where the dialects differ in syntax, the statement asks the
//! [`Dialect`] for the fragment.

use std::borrow::Cow;

use crate::value::{Arg, IntoArg};

/// A statement with its arguments, `$n` naming the n-th.
#[derive(Clone, Debug)]
pub struct Query {
    sql: Cow<'static, str>,
    args: Vec<Arg>,
}

/// A statement with no arguments yet.
pub fn sql(text: impl Into<Cow<'static, str>>) -> Query {
    Query {
        sql: text.into(),
        args: Vec::new(),
    }
}

impl Query {
    /// Binds the next argument (`$1` first).
    pub fn bind(mut self, v: impl IntoArg) -> Self {
        self.args.push(v.into_arg());
        self
    }

    /// Appends SQL text.
    pub fn push(&mut self, text: &str) -> &mut Self {
        self.sql.to_mut().push_str(text);
        self
    }

    /// Binds the next argument and appends its placeholder.
    pub fn push_bind(&mut self, v: impl IntoArg) -> &mut Self {
        self.args.push(v.into_arg());
        let n = self.args.len();
        self.sql.to_mut().push_str(&format!("${n}"));
        self
    }

    /// Binds each of `values` and appends their placeholders, separated by commas (the inside
    /// of an `IN (...)` list).
    pub fn push_binds<V: IntoArg>(&mut self, values: impl IntoIterator<Item = V>) -> &mut Self {
        for (i, v) in values.into_iter().enumerate() {
            if i > 0 {
                self.push(", ");
            }
            self.push_bind(v);
        }
        self
    }

    /// Binds the next argument and returns its placeholder (`$n`) without appending it, for
    /// [`Dialect`] fragments that place it themselves.
    pub fn param(&mut self, v: impl IntoArg) -> String {
        self.args.push(v.into_arg());
        format!("${}", self.args.len())
    }

    pub fn text(&self) -> &str {
        &self.sql
    }

    pub fn args(&self) -> &[Arg] {
        &self.args
    }

    /// The text with `?` for each placeholder and the arguments in the order they appear
    /// (repeated where a placeholder is), for drivers with positional placeholders only.
    /// `$` inside quoted strings is left alone.
    pub fn positional(&self) -> (String, Vec<Arg>) {
        let (text, order) = self.placeholders();
        let args = order
            .iter()
            .map(|&n| self.arg_at(n).cloned().unwrap_or(Arg::Int(None)))
            .collect();
        (text, args)
    }

    /// [`Query::positional`], moving each argument out where its placeholder appears once
    /// (the common case) instead of copying it. SQLite runs statements this way: its `$n`
    /// are named parameters, which it and sqlx look up by a linear scan per parameter, so a
    /// multi-row statement's binding grew with the square of its rows.
    pub fn into_positional(self) -> (String, Vec<Arg>) {
        let (text, order) = self.placeholders();
        let mut left = vec![0usize; self.args.len()];
        for &n in &order {
            if let Some(c) = n.checked_sub(1).and_then(|i| left.get_mut(i)) {
                *c += 1;
            }
        }
        let mut args: Vec<Option<Arg>> = self.args.into_iter().map(Some).collect();
        let out = order
            .iter()
            .map(|&n| {
                let Some(i) = n.checked_sub(1).filter(|i| *i < args.len()) else {
                    return Arg::Int(None);
                };
                left[i] -= 1;
                let arg = if left[i] == 0 {
                    args[i].take()
                } else {
                    args[i].clone()
                };
                arg.unwrap_or(Arg::Int(None))
            })
            .collect();
        (text, out)
    }

    fn arg_at(&self, n: usize) -> Option<&Arg> {
        self.args.get(n.wrapping_sub(1))
    }

    /// The text with `?` for each `$n` outside quotes, and the `n` of each in order.
    fn placeholders(&self) -> (String, Vec<usize>) {
        let mut out = String::with_capacity(self.sql.len());
        let mut order = Vec::with_capacity(self.args.len());
        let mut chars = self.sql.chars().peekable();
        let mut quoted = false;
        while let Some(c) = chars.next() {
            if c == '\'' {
                quoted = !quoted;
            }
            if c != '$' || quoted || !chars.peek().is_some_and(char::is_ascii_digit) {
                out.push(c);
                continue;
            }
            let mut n = 0usize;
            while let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
                n = n.saturating_mul(10).saturating_add(d as usize);
                chars.next();
            }
            out.push('?');
            order.push(n);
        }
        (out, order)
    }
}

/// The SQL dialects coupond speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
    Mysql,
}

impl Dialect {
    /// The SQL expression for a template's coupons claimed, in a statement on `templates`
    /// (unaliased): SQLite keeps it on the row; PostgreSQL and MySQL sum the stock shards.
    pub fn claimed_column(self) -> &'static str {
        match self {
            Dialect::Sqlite => "claimed",
            Dialect::Postgres => {
                "(SELECT COALESCE(SUM(s.claimed), 0)::bigint FROM template_stock s
                  WHERE s.template_id = templates.id)"
            }
            Dialect::Mysql => {
                "(SELECT CAST(COALESCE(SUM(s.claimed), 0) AS SIGNED) FROM template_stock s
                  WHERE s.template_id = templates.id)"
            }
        }
    }

    /// The columns a template is read with (`claimed` as [`Dialect::claimed_column`] has it).
    pub fn template_columns(self) -> &'static str {
        match self {
            Dialect::Sqlite => {
                "id, merchant_id, spec, claim_start, claim_end, claimed, used, given, reserved, \
                 created_at, updated_at, published_at, aborted_at, approval, reviewed_at, \
                 review_reason, version, paused_at, pause_reason, pause_scope"
            }
            Dialect::Postgres => {
                "id, merchant_id, spec::text AS spec, claim_start, claim_end, (SELECT \
                 COALESCE(SUM(s.claimed), 0)::bigint FROM template_stock s WHERE s.template_id = \
                 id) AS claimed, used, given, reserved, created_at, updated_at, published_at, \
                 aborted_at, approval, reviewed_at, review_reason, version, paused_at, \
                 pause_reason, pause_scope"
            }
            Dialect::Mysql => {
                "id, merchant_id, spec, claim_start, claim_end, (SELECT \
                 CAST(COALESCE(SUM(s.claimed), 0) AS SIGNED) FROM template_stock s WHERE \
                 s.template_id = id) AS claimed, used, given, reserved, created_at, updated_at, \
                 published_at, aborted_at, approval, reviewed_at, review_reason, version, \
                 paused_at, pause_reason, pause_scope"
            }
        }
    }

    /// The audit's checks on what is the backend's own: `claimed` on templates (SQLite), or
    /// the stock shards and the references the claim path's dropped foreign keys guarded.
    pub fn own_audit_checks(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Dialect::Sqlite => &crate::reports::CLAIMED_ON_TEMPLATES,
            _ => &[crate::reports::STOCK_IN_SHARDS, crate::reports::ORPHANS],
        }
    }

    /// `expr` is one of the integers in list parameter `$param` (an [`Arg::Ints`]).
    /// The text of `key` in the `reference` of the JSON record in `column` (a template's or an
    /// activity's `spec`), NULL when absent. `key` is a literal of this crate, never input.
    pub fn reference(self, column: &str, key: &'static str) -> String {
        match self {
            Dialect::Sqlite => format!("json_extract({column}, '$.reference.{key}')"),
            Dialect::Postgres => format!("({column}->'reference'->>'{key}')"),
            Dialect::Mysql => {
                format!("JSON_UNQUOTE(JSON_EXTRACT({column}, '$.reference.{key}'))")
            }
        }
    }

    pub fn in_list(self, expr: &str, param: usize) -> String {
        match self {
            Dialect::Postgres => format!("{expr} = ANY(${param})"),
            Dialect::Sqlite => format!("{expr} IN (SELECT value FROM json_each(${param}))"),
            Dialect::Mysql => format!(
                "{expr} IN (SELECT v FROM JSON_TABLE(${param}, '$[*]' COLUMNS (v BIGINT PATH '$')) AS l)"
            ),
        }
    }

    /// `expr` is none of the integers in list parameter `$param`.
    pub fn not_in_list(self, expr: &str, param: usize) -> String {
        match self {
            Dialect::Postgres => format!("{expr} <> ALL(${param})"),
            _ => format!("NOT ({})", self.in_list(expr, param)),
        }
    }

    /// Equality where NULL equals NULL.
    pub fn same(self, a: &str, b: &str) -> String {
        match self {
            Dialect::Postgres => format!("{a} IS NOT DISTINCT FROM {b}"),
            Dialect::Sqlite => format!("{a} IS {b}"),
            Dialect::Mysql => format!("{a} <=> {b}"),
        }
    }

    /// The text `a` followed by the text `b` (`||` is a logical OR on MySQL).
    pub fn concat(self, a: &str, b: &str) -> String {
        match self {
            Dialect::Mysql => format!("CONCAT({a}, {b})"),
            _ => format!("({a} || {b})"),
        }
    }

    /// `SUM(expr)` as a 64-bit integer (PostgreSQL sums `BIGINT` into `NUMERIC`).
    pub fn sum(self, expr: &str) -> String {
        match self {
            Dialect::Postgres => format!("SUM({expr})::BIGINT"),
            Dialect::Sqlite => format!("SUM({expr})"),
            Dialect::Mysql => format!("CAST(SUM({expr}) AS SIGNED)"),
        }
    }

    /// The lesser of `a` and `b`.
    pub fn least(self, a: &str, b: &str) -> String {
        match self {
            Dialect::Sqlite => format!("MIN({a}, {b})"),
            _ => format!("LEAST({a}, {b})"),
        }
    }

    /// The instant `micros` (an integer expression) microseconds before instant `expr`.
    pub fn minus_micros(self, expr: &str, micros: &str) -> String {
        match self {
            Dialect::Postgres => format!("{expr} - {micros} * INTERVAL '1 microsecond'"),
            _ => format!("{expr} - {micros}"),
        }
    }

    /// Stored integer list `list` (see [`Arg::Ints`]) holds the integer `value`.
    pub fn list_has(self, list: &str, value: &str) -> String {
        match self {
            Dialect::Postgres => format!("{value} = ANY({list})"),
            Dialect::Sqlite => {
                format!("EXISTS (SELECT 1 FROM json_each({list}) WHERE value = {value})")
            }
            // `MEMBER OF` is MySQL 8's only; this form MariaDB reads too.
            Dialect::Mysql => format!("JSON_CONTAINS({list}, CAST({value} AS CHAR))"),
        }
    }

    /// Integer lists `list` and `other` (stored, or parameters) share a value.
    pub fn lists_overlap(self, list: &str, other: &str) -> String {
        match self {
            Dialect::Postgres => format!("{list} && {other}"),
            Dialect::Sqlite => format!(
                "EXISTS (SELECT 1 FROM json_each({list}) a JOIN json_each({other}) m \
                 ON a.value = m.value)"
            ),
            Dialect::Mysql => format!("JSON_OVERLAPS({list}, {other})"),
        }
    }

    /// Appended to an `INSERT` that skips rows whose unique key is taken (`col` is any column
    /// of the table, which MySQL's form assigns to itself).
    pub fn on_conflict_nothing(self, col: &str) -> String {
        match self {
            Dialect::Mysql => format!(" ON DUPLICATE KEY UPDATE {col} = {col}"),
            _ => " ON CONFLICT DO NOTHING".to_owned(),
        }
    }

    /// The instant `expr` truncated to its hour.
    pub fn hour(self, expr: &str) -> String {
        match self {
            Dialect::Postgres => format!("date_trunc('hour', {expr})"),
            Dialect::Sqlite => format!("(({expr}) / 3600000000) * 3600000000"),
            // `/` is decimal division on MySQL; `DIV` is the integer one.
            Dialect::Mysql => format!("(({expr}) DIV 3600000000) * 3600000000"),
        }
    }

    /// Appended to a `SELECT` in a transaction: locks the rows it reads until the transaction
    /// ends, where writers run at once: `FOR NO KEY UPDATE` on PostgreSQL when `no_key` (it
    /// admits the KEY SHARE locks foreign keys take), else `FOR UPDATE`. Empty on SQLite,
    /// whose one writer excludes the others.
    pub fn lock_rows(self, no_key: bool) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres if no_key => " FOR NO KEY UPDATE",
            Dialect::Postgres | Dialect::Mysql => " FOR UPDATE",
        }
    }

    /// The `coupons` table in a statement that finds an order's coupons by `order_id` and
    /// locks them (a locking read, or an `UPDATE`). MariaDB locks every index record its
    /// chosen index visits: left to itself it picked `(status, valid_until)` with a filter on
    /// the order, and so locked every `locked` coupon of every order, and unrelated checkouts
    /// deadlocked. The hint makes it visit only this order's rows.
    pub fn coupons_of_order(self) -> &'static str {
        match self {
            Dialect::Mysql => "coupons FORCE INDEX (coupons_by_order)",
            Dialect::Sqlite | Dialect::Postgres => "coupons",
        }
    }

    /// As [`Dialect::lock_rows`] (`FOR UPDATE`), passing over rows another transaction holds:
    /// instances share work (expiry, issuance jobs) without waiting on each other.
    pub fn lock_rows_skip_locked(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres | Dialect::Mysql => " FOR UPDATE SKIP LOCKED",
        }
    }

    /// Appended to an `INSERT` that replaces `cols` of the row whose unique `key` is taken.
    pub fn on_conflict_update(self, key: &str, cols: &[&str]) -> String {
        let set = |f: &dyn Fn(&str) -> String| {
            cols.iter()
                .map(|c| format!("{c} = {}", f(c)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Dialect::Mysql => format!(
                " ON DUPLICATE KEY UPDATE {}",
                set(&|c| format!("VALUES({c})"))
            ),
            _ => format!(
                " ON CONFLICT ({key}) DO UPDATE SET {}",
                set(&|c| format!("excluded.{c}"))
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_placeholders_become_positional_ones_in_order() {
        let q = sql("SELECT '$1', $2 WHERE a = $1 AND b IS $2")
            .bind(10_i64)
            .bind("x");
        let (text, args) = q.positional();
        assert_eq!(text, "SELECT '$1', ? WHERE a = ? AND b IS ?");
        assert_eq!(
            args,
            [
                Arg::Text(Some("x".into())),
                Arg::Int(Some(10)),
                Arg::Text(Some("x".into()))
            ]
        );
    }

    #[test]
    fn moved_arguments_match_copied_ones() {
        let q = sql("SELECT '$1', $2 WHERE a = $1 AND b IS $2 AND c = $3 AND d = $9")
            .bind(10_i64)
            .bind("x")
            .bind("y");
        let copied = q.positional();
        assert_eq!(copied.1.len(), 5);
        assert_eq!(copied.1[4], Arg::Int(None), "an unbound $9 binds NULL");
        assert_eq!(q.into_positional(), copied);
    }

    #[test]
    fn row_locks_only_where_writers_run_at_once() {
        assert_eq!(Dialect::Sqlite.lock_rows(true), "");
        assert_eq!(Dialect::Sqlite.lock_rows_skip_locked(), "");
        assert_eq!(Dialect::Postgres.lock_rows(true), " FOR NO KEY UPDATE");
        assert_eq!(Dialect::Postgres.lock_rows(false), " FOR UPDATE");
        assert_eq!(
            Dialect::Postgres.lock_rows_skip_locked(),
            " FOR UPDATE SKIP LOCKED"
        );
    }

    #[test]
    fn pushed_binds_are_numbered() {
        let mut q = sql("SELECT 1 WHERE a = $1").bind(1_i64);
        q.push(" AND b = ")
            .push_bind(2_i64)
            .push(" AND c = ")
            .push_bind(3_i64);
        assert_eq!(q.text(), "SELECT 1 WHERE a = $1 AND b = $2 AND c = $3");
        assert_eq!(q.args().len(), 3);
    }
}
