//! Values crossing the shared layer: [`Arg`]s bound to statements and the [`Row`]s read back,
//! in a form every backend can produce and consume without the shared code seeing a driver
//! type.

use std::sync::Arc;

use coupond_domain::Timestamp;
use coupond_store::{StoreError, StoreResult};

/// A value bound to a statement. Every variant keeps its type when it is NULL, because
/// PostgreSQL types parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Int(Option<i64>),
    Text(Option<String>),
    Bool(bool),
    /// An instant: `TIMESTAMPTZ` on PostgreSQL, microseconds since the epoch elsewhere.
    Time(Option<Timestamp>),
    /// A JSON document: `JSONB` on PostgreSQL, text elsewhere.
    Json(String),
    Bytes(Option<Vec<u8>>),
    /// Integers: an array on PostgreSQL, a JSON array elsewhere. Stored lists (a merchant's
    /// cities) and list parameters ([`crate::Dialect::in_list`]) both use it.
    Ints(Vec<i64>),
}

/// A JSON document to bind (see [`Arg::Json`]).
#[derive(Clone, Debug)]
pub struct Json(pub String);

/// Conversion into an [`Arg`], so statements bind plain Rust values.
pub trait IntoArg {
    fn into_arg(self) -> Arg;
}

macro_rules! into_arg {
    ($($t:ty => |$v:ident| $e:expr;)*) => {
        $(impl IntoArg for $t {
            fn into_arg(self) -> Arg {
                let $v = self;
                $e
            }
        })*
    };
}

into_arg! {
    i64 => |v| Arg::Int(Some(v));
    i32 => |v| Arg::Int(Some(i64::from(v)));
    u32 => |v| Arg::Int(Some(i64::from(v)));
    Option<i64> => |v| Arg::Int(v);
    &str => |v| Arg::Text(Some(v.to_owned()));
    String => |v| Arg::Text(Some(v));
    &String => |v| Arg::Text(Some(v.clone()));
    Option<&str> => |v| Arg::Text(v.map(str::to_owned));
    Option<String> => |v| Arg::Text(v);
    &Option<String> => |v| Arg::Text(v.clone());
    bool => |v| Arg::Bool(v);
    Timestamp => |v| Arg::Time(Some(v));
    Option<Timestamp> => |v| Arg::Time(v);
    Json => |v| Arg::Json(v.0);
    Vec<u8> => |v| Arg::Bytes(Some(v));
    &[u8] => |v| Arg::Bytes(Some(v.to_vec()));
    Option<Vec<u8>> => |v| Arg::Bytes(v);
    Vec<i64> => |v| Arg::Ints(v);
    &[i64] => |v| Arg::Ints(v.to_vec());
    &Vec<i64> => |v| Arg::Ints(v.clone());
    Arg => |v| v;
}

/// A column value as read.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Bool(bool),
    Time(Timestamp),
    Bytes(Vec<u8>),
    Ints(Vec<i64>),
}

/// One row read, owning its values; columns are found by name.
#[derive(Clone, Debug)]
pub struct Row {
    columns: Arc<[String]>,
    values: Vec<Value>,
}

fn wrong(col: &str, want: &str, got: &Value) -> StoreError {
    StoreError::other(format!("column {col}: expected {want}, found {got:?}"))
}

impl Row {
    /// A row of `values` under `columns` (same order); backends build these.
    pub fn new(columns: Arc<[String]>, values: Vec<Value>) -> Self {
        Row { columns, values }
    }

    /// A driver's `rows` as [`Row`]s, under the column `names` of the first (read once and
    /// shared), each column's value read by `value` (by index).
    pub fn all_of<R>(
        rows: &[R],
        names: impl Fn(&R) -> Vec<String>,
        value: impl Fn(&R, usize) -> StoreResult<Value>,
    ) -> StoreResult<Vec<Row>> {
        let Some(first) = rows.first() else {
            return Ok(Vec::new());
        };
        let columns: Arc<[String]> = names(first).into();
        let row = |r| {
            let values = (0..columns.len()).map(|i| value(r, i));
            Ok(Row::new(
                columns.clone(),
                values.collect::<StoreResult<_>>()?,
            ))
        };
        rows.iter().map(row).collect()
    }

    /// The value of `col`; an error naming it if the statement did not select it.
    pub fn value(&self, col: &str) -> StoreResult<&Value> {
        self.columns
            .iter()
            .position(|c| c == col)
            .map(|i| &self.values[i])
            .ok_or_else(|| StoreError::other(format!("no column {col}")))
    }

    /// Whether the statement selected `col`.
    pub fn has(&self, col: &str) -> bool {
        self.columns.iter().any(|c| c == col)
    }

    pub fn opt_i64(&self, col: &str) -> StoreResult<Option<i64>> {
        match self.value(col)? {
            Value::Null => Ok(None),
            Value::Int(v) => Ok(Some(*v)),
            Value::Bool(b) => Ok(Some(i64::from(*b))),
            v => Err(wrong(col, "an integer", v)),
        }
    }

    pub fn i64(&self, col: &str) -> StoreResult<i64> {
        self.opt_i64(col)?
            .ok_or_else(|| wrong(col, "an integer", &Value::Null))
    }

    /// Text; also a binary string that holds UTF-8 (MySQL reports the text of a binary
    /// collation's expressions as bytes).
    pub fn opt_str(&self, col: &str) -> StoreResult<Option<&str>> {
        match self.value(col)? {
            Value::Null => Ok(None),
            Value::Text(v) => Ok(Some(v)),
            Value::Bytes(b) => std::str::from_utf8(b)
                .map(Some)
                .map_err(|_| wrong(col, "text", &Value::Bytes(Vec::new()))),
            v => Err(wrong(col, "text", v)),
        }
    }

    pub fn str(&self, col: &str) -> StoreResult<&str> {
        self.opt_str(col)?
            .ok_or_else(|| wrong(col, "text", &Value::Null))
    }

    pub fn string(&self, col: &str) -> StoreResult<String> {
        self.str(col).map(str::to_owned)
    }

    pub fn opt_string(&self, col: &str) -> StoreResult<Option<String>> {
        Ok(self.opt_str(col)?.map(str::to_owned))
    }

    /// An instant, stored as `TIMESTAMPTZ` or as microseconds since the epoch.
    pub fn opt_time(&self, col: &str) -> StoreResult<Option<Timestamp>> {
        match self.value(col)? {
            Value::Null => Ok(None),
            Value::Time(t) => Ok(Some(*t)),
            Value::Int(us) => Timestamp::from_unix_micros(*us)
                .map(Some)
                .ok_or_else(|| StoreError::other(format!("column {col}: instant out of range"))),
            v => Err(wrong(col, "an instant", v)),
        }
    }

    pub fn time(&self, col: &str) -> StoreResult<Timestamp> {
        self.opt_time(col)?
            .ok_or_else(|| wrong(col, "an instant", &Value::Null))
    }

    pub fn opt_bytes(&self, col: &str) -> StoreResult<Option<&[u8]>> {
        match self.value(col)? {
            Value::Null => Ok(None),
            Value::Bytes(b) => Ok(Some(b)),
            v => Err(wrong(col, "bytes", v)),
        }
    }

    pub fn bytes(&self, col: &str) -> StoreResult<&[u8]> {
        self.opt_bytes(col)?
            .ok_or_else(|| wrong(col, "bytes", &Value::Null))
    }

    /// Integers, stored as an array or as a JSON array.
    pub fn ints(&self, col: &str) -> StoreResult<Vec<i64>> {
        match self.value(col)? {
            Value::Ints(v) => Ok(v.clone()),
            Value::Text(_) | Value::Bytes(_) => serde_json::from_str(self.str(col)?)
                .map_err(|e| StoreError::other(format!("column {col}: {e}"))),
            v => Err(wrong(col, "integers", v)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(values: Vec<Value>) -> Row {
        let cols: Vec<String> = (0..values.len()).map(|i| format!("c{i}")).collect();
        Row::new(cols.into(), values)
    }

    #[test]
    fn instants_read_from_either_storage() {
        let t = Timestamp::from_unix_micros(1_700_000_000_123_456).unwrap();
        let r = row(vec![
            Value::Time(t),
            Value::Int(t.unix_micros()),
            Value::Null,
        ]);
        assert_eq!(r.time("c0").unwrap(), t);
        assert_eq!(r.time("c1").unwrap(), t);
        assert_eq!(r.opt_time("c2").unwrap(), None);
        assert!(r.time("c2").is_err());
    }

    #[test]
    fn lists_read_from_arrays_and_json() {
        let r = row(vec![Value::Ints(vec![1, 2]), Value::Text("[3,4]".into())]);
        assert_eq!(r.ints("c0").unwrap(), [1, 2]);
        assert_eq!(r.ints("c1").unwrap(), [3, 4]);
    }

    #[test]
    fn a_wrong_type_or_a_missing_column_is_an_error() {
        let r = row(vec![Value::Text("x".into())]);
        assert!(r.i64("c0").is_err());
        assert!(r.str("nope").is_err());
        assert_eq!(r.str("c0").unwrap(), "x");
    }
}
