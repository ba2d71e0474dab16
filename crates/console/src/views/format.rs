//! How API answers read on a page: rows of the tables, money in major units, instants to the
//! minute (UTC), a coupon's value in words. Presentation only: no rule is decided here.

use coupond_api::views::{ActivityView, TemplateView};
use coupond_domain::{CityId, CouponKind, CouponValue, Timestamp, Window};

use super::names::{CityNames, MerchantNames};

/// Minor units as `1,234.50`.
pub fn money(minor: i64) -> String {
    let sign = if minor < 0 { "-" } else { "" };
    let m = minor.unsigned_abs();
    let whole = (m / 100).to_string();
    let mut grouped = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("{sign}{grouped}.{:02}", m % 100)
}

/// Hundredths as a decimal a person reads and types back: `1250` as `12.50`, `-5` as `-0.05`.
pub fn decimal(hundredths: i64) -> String {
    let sign = if hundredths < 0 { "-" } else { "" };
    let n = hundredths.unsigned_abs();
    format!("{sign}{}.{:02}", n / 100, n % 100)
}

/// The largest decimal a form takes, in hundredths (money's own bound, 10^15 minor units).
const MAX_HUNDREDTHS: i64 = 1_000_000_000_000_000;

/// A decimal a person typed (`12.5`, `-0.05`, `3`) in hundredths (money in minor units,
/// percentages in basis points), read exactly (never through a float); the field is named if
/// it is not a number with at most two decimals, or out of range. [`decimal`] writes it back.
pub fn hundredths(field: &'static str, s: &str) -> Result<i64, (&'static str, String)> {
    let s = s.trim();
    let (negative, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let only_digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !only_digits(whole) || !only_digits(fraction) {
        return Err((field, "enter a number".to_owned()));
    }
    if fraction.len() > 2 {
        return Err((field, "at most two decimals".to_owned()));
    }
    let out_of_range = || (field, "this number is out of range".to_owned());
    let whole: i64 = match whole {
        "" => 0,
        w => w.parse().map_err(|_| out_of_range())?,
    };
    let fraction: i64 = format!("{fraction:0<2}")
        .parse()
        .map_err(|_| out_of_range())?;
    let n = whole.checked_mul(100).and_then(|w| w.checked_add(fraction));
    let n = n
        .filter(|n| *n <= MAX_HUNDREDTHS)
        .ok_or_else(out_of_range)?;
    Ok(if negative { -n } else { n })
}

/// Basis points as a percentage: `1250` as `12.50 %`.
pub fn percent(bps: i64) -> String {
    format!("{} %", decimal(bps))
}

/// Basis points as a share in words, without trailing zeros: `1500` as `15 %`, `1250` as
/// `12.5 %`, `1234` as `12.34 %`.
pub fn share(bps: i64) -> String {
    let text = decimal(bps);
    format!("{} %", text.trim_end_matches('0').trim_end_matches('.'))
}

/// An RFC 3339 instant (`2026-11-24T12:00:00Z`) as `2026-11-24 12:00 UTC`.
pub fn minute(rfc3339: &str) -> String {
    match (rfc3339.get(..10), rfc3339.get(11..16)) {
        (Some(day), Some(time)) => format!("{day} {time} UTC"),
        _ => rfc3339.to_owned(),
    }
}

/// `one` when `n` is 1, else `many`: "1 activity", "2 activities", "0 activities".
pub fn plural<'a>(n: impl std::fmt::Display, one: &'a str, many: &'a str) -> &'a str {
    if n.to_string() == "1" {
        one
    } else {
        many
    }
}

/// An instant as `2026-11-24 12:00 UTC`.
pub fn at(t: Timestamp) -> String {
    minute(&t.to_string())
}

/// A window as `start → end`.
pub fn span(w: &Window) -> String {
    format!("{} → {}", at(w.start), at(w.end))
}

/// A coupon value in words.
pub fn worth(v: &CouponValue) -> String {
    let cap = |c: &Option<coupond_domain::Money>| match c {
        Some(c) => format!(" (up to {})", money(c.minor())),
        None => String::new(),
    };
    match v {
        CouponValue::AmountOff { amount } => format!("{} off", money(amount.minor())),
        CouponValue::PercentOff { bps, cap: c } => {
            format!("{} off{}", share(i64::from(bps.get())), cap(c))
        }
        CouponValue::FreeDays { days } => {
            format!("{days} free {}", plural(days, "day", "days"))
        }
        CouponValue::DepositWaiver { cap: c } => format!("deposit waived{}", cap(c)),
        CouponValue::SpecialPrice { price } => format!("special price {}", money(price.minor())),
        CouponValue::FreeShipping { cap: c } => format!("free shipping{}", cap(c)),
        CouponValue::BuyXGetY { buy, get, .. } => format!("buy {buy} get {get}"),
    }
}

/// An activity as a row.
#[derive(Debug, Clone)]
pub struct ActivityRow {
    pub id: i64,
    pub title: String,
    pub status: String,
    pub kind: String,
    pub bounds: String,
    pub cities: String,
    /// The ids, to name them ([`ActivityRow::named`]).
    pub city_ids: Vec<i64>,
    pub enrollment: String,
    pub run: String,
}

impl ActivityRow {
    pub fn of(a: &ActivityView) -> Self {
        let t = &a.terms;
        let bound = |n: i64| match t.kind {
            CouponKind::PercentOff => format!("{} %", n as f64 / 100.0),
            CouponKind::FreeDays | CouponKind::BuyXGetY => n.to_string(),
            _ => money(n),
        };
        let cities: Vec<String> = t.cities.iter().map(|c| c.get().to_string()).collect();
        ActivityRow {
            id: a.id.get(),
            title: t.title.clone(),
            status: a.status.as_str().to_owned(),
            bounds: format!("{} – {}", bound(t.value_min), bound(t.value_max)),
            kind: t.kind.as_str().replace('_', " "),
            cities: cities.join(", "),
            city_ids: t.cities.iter().map(|c| c.get()).collect(),
            enrollment: span(&t.enrollment),
            run: span(&t.run),
        }
    }

    /// The row with its cities by name ("Lisbon (1), city 2").
    pub fn named(mut self, cities: &CityNames) -> Self {
        let ids = self.city_ids.iter().filter_map(|c| CityId::new(*c).ok());
        self.cities = cities.list(ids);
        self
    }
}

/// A template as a row.
#[derive(Debug, Clone)]
pub struct TemplateRow {
    pub id: i64,
    pub title: String,
    pub merchant: Option<i64>,
    /// Its merchant by name with the id, once [`TemplateRow::named`] (else empty).
    pub merchant_name: String,
    pub status: String,
    pub value: String,
    pub claimed: i64,
    pub stock: i64,
    /// Claimed, as a whole percentage of the stock.
    pub pct: i64,
    pub used: i64,
    pub given: String,
    pub expires: String,
    /// Discount given against the budget: `given / cap`, or `given` with no budget.
    pub budget: String,
    /// Given, as a whole percentage of the budget (0 without one).
    pub budget_pct: i64,
    /// When it last changed.
    pub updated: String,
    /// Raw, for filters and sorting: fewer than 5 % left, or expiring within 7 days.
    pub low: bool,
    pub expires_at: String,
    pub given_minor: i64,
    pub updated_at: String,
}

impl TemplateRow {
    pub fn of(t: &TemplateView) -> Self {
        let stock = t.terms.total_stock;
        let given = t.given.minor();
        let cap = t.terms.budget.map(|b| b.minor());
        TemplateRow {
            id: t.id.get(),
            title: t.terms.title.clone(),
            merchant: t.merchant_id.map(|m| m.get()),
            merchant_name: String::new(),
            status: t.status.as_str().to_owned(),
            value: worth(&t.terms.value),
            claimed: t.claimed,
            stock,
            pct: if stock > 0 {
                (t.claimed * 100 / stock).clamp(0, 100)
            } else {
                0
            },
            used: t.used,
            given: money(given),
            expires: at(t.expires_at),
            budget: match cap {
                Some(c) => format!("{} / {}", money(given), money(c)),
                None => format!("{} (no budget)", money(given)),
            },
            budget_pct: cap
                .filter(|c| *c > 0)
                .map_or(0, |c| (given * 100 / c).clamp(0, 100)),
            updated: at(t.updated_at),
            low: t.low_on_stock,
            expires_at: t.expires_at.to_string(),
            given_minor: given,
            updated_at: t.updated_at.to_string(),
        }
    }

    /// The row with its merchant by name ("Harbour Homes (1)").
    pub fn named(mut self, merchants: &MerchantNames) -> Self {
        self.merchant_name = self.merchant.map(|m| merchants.one(m)).unwrap_or_default();
        self
    }
}

/// A table column a person may sort by, and which way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Title,
    Status,
    Claimed,
    Used,
    Given,
    Expires,
    Updated,
}

impl SortKey {
    /// Every key with its query name.
    pub const ALL: [(SortKey, &'static str); 7] = [
        (SortKey::Title, "title"),
        (SortKey::Status, "status"),
        (SortKey::Claimed, "claimed"),
        (SortKey::Used, "used"),
        (SortKey::Given, "given"),
        (SortKey::Expires, "expires"),
        (SortKey::Updated, "updated"),
    ];

    pub fn parse(s: &str) -> Option<SortKey> {
        Self::ALL.iter().find(|(_, n)| *n == s).map(|(k, _)| *k)
    }
}

/// Sorts template rows by `key` (ties by id), descending if `desc`.
pub fn sort_templates(rows: &mut [TemplateRow], key: SortKey, desc: bool) {
    rows.sort_by(|a, b| {
        let o = match key {
            SortKey::Title => a.title.to_lowercase().cmp(&b.title.to_lowercase()),
            SortKey::Status => a.status.cmp(&b.status),
            SortKey::Claimed => (a.pct, a.claimed).cmp(&(b.pct, b.claimed)),
            SortKey::Used => a.used.cmp(&b.used),
            SortKey::Given => a.given_minor.cmp(&b.given_minor),
            SortKey::Expires => a.expires_at.cmp(&b.expires_at),
            SortKey::Updated => a.updated_at.cmp(&b.updated_at),
        };
        let o = o.then(a.id.cmp(&b.id));
        if desc {
            o.reverse()
        } else {
            o
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decimals_are_read_exactly_and_written_back() {
        for (typed, n) in [
            ("12.5", 1250),
            ("3", 300),
            (" 0.07 ", 7),
            ("-0.05", -5),
            (".5", 50),
        ] {
            assert_eq!(hundredths("price", typed), Ok(n), "{typed}");
        }
        assert_eq!(hundredths("price", "19.99").map(decimal).unwrap(), "19.99");
        assert_eq!(hundredths("price", "0.29"), Ok(29));
        // A third decimal is refused, not rounded away.
        for bad in ["", "-", ".", "1e3", "12,5", "1.2.3", "abc", "+1", "1.234"] {
            assert!(hundredths("price", bad).is_err(), "{bad}");
        }
        assert!(
            hundredths("price", "10000000000000.01").is_err(),
            "past money's bound"
        );
        assert_eq!(hundredths("price", "10000000000000"), Ok(MAX_HUNDREDTHS));
    }

    #[test]
    fn counts_agree_with_their_nouns() {
        assert_eq!(plural(1, "activity", "activities"), "activity");
        assert_eq!(plural(0_u64, "activity", "activities"), "activities");
        assert_eq!(plural(2_usize, "line", "lines"), "lines");
        assert_eq!(worth(&CouponValue::FreeDays { days: 1 }), "1 free day");
        assert_eq!(worth(&CouponValue::FreeDays { days: 7 }), "7 free days");
    }

    #[test]
    fn money_reads_in_major_units() {
        assert_eq!(money(0), "0.00");
        assert_eq!(money(20_000), "200.00");
        assert_eq!(money(123_456_789), "1,234,567.89");
        assert_eq!(money(-5), "-0.05");
    }

    #[test]
    fn template_rows_sort_by_the_column_chosen() {
        let row = |id: i64, title: &str, claimed: i64, given: i64| {
            let v = json!({"id": id, "title": title, "total_stock": 100,
                "claimed": claimed, "given": given, "status": "active", "cities": [1],
                "value": {"kind": "amount_off", "amount": 100},
                "validity": {"type": "relative", "days": 7},
                "claim_window_follows_activity": false, "remaining": 100 - claimed,
                "low_on_stock": false, "used": 0, "reserved": 0,
                "expires_at": "2026-12-01T00:00:00Z", "created_at": "2026-11-01T00:00:00Z",
                "updated_at": "2026-11-01T00:00:00Z"});
            TemplateRow::of(&serde_json::from_value(v).unwrap())
        };
        let mut rows = vec![
            row(1, "b", 50, 300),
            row(2, "A", 90, 100),
            row(3, "c", 10, 200),
        ];
        let ids = |rows: &[TemplateRow]| rows.iter().map(|r| r.id).collect::<Vec<_>>();
        sort_templates(&mut rows, SortKey::Title, false);
        assert_eq!(ids(&rows), [2, 1, 3]);
        sort_templates(&mut rows, SortKey::Claimed, true);
        assert_eq!(ids(&rows), [2, 1, 3]);
        sort_templates(&mut rows, SortKey::Given, false);
        assert_eq!(ids(&rows), [2, 3, 1]);
        assert_eq!(SortKey::parse("given"), Some(SortKey::Given));
        assert_eq!(SortKey::parse("id; drop"), None);
    }

    #[test]
    fn values_read_in_words() {
        let worded = |v: serde_json::Value| worth(&serde_json::from_value(v).unwrap());
        assert_eq!(
            worded(json!({"kind": "amount_off", "amount": 20000})),
            "200.00 off"
        );
        assert_eq!(
            worded(json!({"kind": "percent_off", "bps": 1500, "cap": 5000})),
            "15 % off (up to 50.00)"
        );
        assert_eq!(
            worded(json!({"kind": "buy_x_get_y", "buy": 2, "get": 1})),
            "buy 2 get 1"
        );
    }
}
