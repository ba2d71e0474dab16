//! Instants and windows. Every instant is UTC with microsecond precision, the precision both
//! storage backends keep, so a value reads back exactly as it was written.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime, UtcOffset};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::{RefOr, Schema};
use utoipa::ToSchema;

/// A UTC instant, microsecond precision. JSON: RFC 3339 (`2026-11-21T08:00:00Z`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(OffsetDateTime);

impl Timestamp {
    /// The earliest instant coupond stores (1970-01-01).
    pub const UNIX_EPOCH: Timestamp = Timestamp(OffsetDateTime::UNIX_EPOCH);

    /// Converts to UTC and truncates to the microsecond. `None` if the instant in UTC falls
    /// outside what the `time` crate represents (a local time just before year 10000 with a
    /// negative offset).
    pub fn from_datetime(dt: OffsetDateTime) -> Option<Self> {
        let dt = dt.checked_to_offset(UtcOffset::UTC)?;
        let micros = dt.microsecond();
        // Cannot fail: micros * 1000 < 10^9.
        Some(Timestamp(
            dt.replace_nanosecond(micros * 1000).unwrap_or(dt),
        ))
    }

    pub fn from_unix_micros(micros: i64) -> Option<Self> {
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(micros) * 1000)
            .ok()
            .map(Timestamp)
    }

    pub fn unix_micros(self) -> i64 {
        (self.0.unix_timestamp_nanos() / 1000) as i64
    }

    pub fn datetime(self) -> OffsetDateTime {
        self.0
    }

    /// Parses RFC 3339; any offset is accepted and converted to UTC. Instants must lie in
    /// 1970..=9000, which leaves every later computation (validity of up to ten years) far
    /// from the end of the representable range.
    pub fn parse(s: &str) -> Result<Self, String> {
        let dt = OffsetDateTime::parse(s, &Rfc3339)
            .map_err(|e| format!("expected an RFC 3339 time such as 2026-11-21T08:00:00Z: {e}"))?;
        let out_of_range = || "time must be between 1970 and 9000".to_owned();
        let ts = Self::from_datetime(dt).ok_or_else(out_of_range)?;
        if !(1970..=9000).contains(&ts.0.year()) {
            return Err(out_of_range());
        }
        Ok(ts)
    }

    /// `self + d`, saturating at the ends of the representable range.
    pub fn plus(self, d: Duration) -> Self {
        match self.0.checked_add(d) {
            Some(t) => Timestamp(t),
            None if d.is_negative() => Timestamp::UNIX_EPOCH.min(self),
            None => Timestamp(time::PrimitiveDateTime::MAX.assume_utc()),
        }
    }

    pub fn minus(self, d: Duration) -> Self {
        self.plus(-d)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.format(&Rfc3339) {
            Ok(s) => f.write_str(&s),
            Err(_) => write!(f, "{}", self.0),
        }
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Timestamp::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl utoipa::PartialSchema for Timestamp {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
            .description(Some(
                "RFC 3339 instant, stored in UTC with microsecond precision",
            ))
            .into()
    }
}
impl ToSchema for Timestamp {}

/// A half-open time window `[start, end)`: `start` is inside, `end` is not. `start < end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(try_from = "RawWindow")]
pub struct Window {
    pub start: Timestamp,
    pub end: Timestamp,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWindow {
    start: Timestamp,
    end: Timestamp,
}

impl TryFrom<RawWindow> for Window {
    type Error = String;
    fn try_from(r: RawWindow) -> Result<Self, String> {
        Window::new(r.start, r.end)
    }
}

impl Window {
    pub fn new(start: Timestamp, end: Timestamp) -> Result<Self, String> {
        if start < end {
            Ok(Window { start, end })
        } else {
            Err(format!("end ({end}) must be after start ({start})"))
        }
    }

    pub fn contains(&self, t: Timestamp) -> bool {
        self.start <= t && t < self.end
    }

    /// Whether `other` lies entirely inside `self`.
    pub fn covers(&self, other: &Window) -> bool {
        self.start <= other.start && other.end <= self.end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_offsets_to_utc_and_truncates() {
        let t = Timestamp::parse("2026-11-21T16:00:00.123456789+08:00").unwrap();
        assert_eq!(t.to_string(), "2026-11-21T08:00:00.123456Z");
        assert_eq!(Timestamp::from_unix_micros(t.unix_micros()), Some(t));
        assert!(Timestamp::parse("yesterday").is_err());
        assert!(Timestamp::parse("1969-12-31T23:59:59Z").is_err());
        // Valid locally, past year 9999 in UTC: refused, not a panic.
        assert!(Timestamp::parse("9999-12-31T23:30:00-01:00").is_err());
        assert!(Timestamp::parse("9001-01-01T00:00:00Z").is_err());
        assert!(Timestamp::parse("9000-12-31T23:59:59Z").is_ok());
        let max = Timestamp::parse("9000-12-31T23:59:59Z").unwrap();
        assert!(max.plus(Duration::days(3650)) > max);
        let huge = Timestamp::from_datetime(time::PrimitiveDateTime::MAX.assume_utc()).unwrap();
        assert!(
            huge.plus(Duration::days(1_000_000)) >= huge,
            "saturates upward"
        );
    }

    #[test]
    fn window_is_half_open() {
        let a = Timestamp::parse("2026-01-01T00:00:00Z").unwrap();
        let b = Timestamp::parse("2026-01-02T00:00:00Z").unwrap();
        let w = Window::new(a, b).unwrap();
        assert!(w.contains(a));
        assert!(!w.contains(b));
        assert!(Window::new(b, a).is_err());
        assert!(Window::new(a, a).is_err());
        let bad = r#"{"start":"2026-01-02T00:00:00Z","end":"2026-01-01T00:00:00Z"}"#;
        assert!(serde_json::from_str::<Window>(bad).is_err());
        let extra = r#"{"start":"2026-01-01T00:00:00Z","end":"2026-01-02T00:00:00Z","x":1}"#;
        assert!(serde_json::from_str::<Window>(extra).is_err());
    }
}
