//! How API answers read on a page: rows of the tables, money in major units, instants to the
//! minute (UTC), a coupon's value in words. Presentation only: no rule is decided here.

use serde_json::Value;

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

/// An RFC 3339 instant as `2026-11-24 12:00 UTC`.
pub fn instant(v: &Value) -> String {
    match v.as_str() {
        Some(s) if s.len() >= 16 => format!("{} {} UTC", &s[..10], &s[11..16]),
        Some(s) => s.to_owned(),
        None => "—".to_owned(),
    }
}

/// A window `{start, end}` as `start → end`.
pub fn window(v: &Value) -> String {
    format!("{} → {}", instant(&v["start"]), instant(&v["end"]))
}

/// A coupon value (`{"kind": ...}`) in words.
pub fn value(v: &Value) -> String {
    let n = |k: &str| v[k].as_i64().unwrap_or(0);
    let cap = |k: &str| match v[k].as_i64() {
        Some(c) => format!(" (up to {})", money(c)),
        None => String::new(),
    };
    match v["kind"].as_str().unwrap_or("") {
        "amount_off" => format!("{} off", money(n("amount"))),
        "percent_off" => format!("{} % off{}", n("bps") as f64 / 100.0, cap("cap")),
        "free_days" => format!("{} free days", n("days")),
        "deposit_waiver" => format!("deposit waived{}", cap("cap")),
        "special_price" => format!("special price {}", money(n("price"))),
        "free_shipping" => format!("free shipping{}", cap("cap")),
        "buy_x_get_y" => format!("buy {} get {}", n("buy"), n("get")),
        other => other.replace('_', " "),
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
    pub enrollment: String,
    pub run: String,
}

impl ActivityRow {
    pub fn of(a: &Value) -> Self {
        let kind = a["kind"].as_str().unwrap_or("").to_owned();
        let bound = |k: &str| {
            let n = a[k].as_i64().unwrap_or(0);
            if kind == "percent_off" {
                format!("{} %", n as f64 / 100.0)
            } else {
                money(n)
            }
        };
        let cities: Vec<String> = a["cities"]
            .as_array()
            .map(|c| c.iter().map(|x| x.to_string()).collect())
            .unwrap_or_default();
        ActivityRow {
            id: a["id"].as_i64().unwrap_or(0),
            title: a["title"].as_str().unwrap_or("").to_owned(),
            status: a["status"].as_str().unwrap_or("").to_owned(),
            bounds: format!("{} – {}", bound("value_min"), bound("value_max")),
            kind: kind.replace('_', " "),
            cities: cities.join(", "),
            enrollment: window(&a["enrollment"]),
            run: window(&a["run"]),
        }
    }
}

/// A template as a row.
#[derive(Debug, Clone)]
pub struct TemplateRow {
    pub id: i64,
    pub title: String,
    pub merchant: Option<i64>,
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
    pub fn of(t: &Value) -> Self {
        let stock = t["total_stock"].as_i64().unwrap_or(0);
        let claimed = t["claimed"].as_i64().unwrap_or(0);
        let remaining = t["remaining"].as_i64().unwrap_or(stock - claimed);
        let given = t["given"].as_i64().unwrap_or(0);
        let cap = t["budget"].as_i64();
        TemplateRow {
            id: t["id"].as_i64().unwrap_or(0),
            title: t["title"].as_str().unwrap_or("").to_owned(),
            merchant: t["merchant_id"].as_i64(),
            status: t["status"].as_str().unwrap_or("").to_owned(),
            value: value(&t["value"]),
            claimed,
            stock,
            pct: if stock > 0 {
                (claimed * 100 / stock).clamp(0, 100)
            } else {
                0
            },
            used: t["used"].as_i64().unwrap_or(0),
            given: money(given),
            expires: instant(&t["expires_at"]),
            budget: match cap {
                Some(c) => format!("{} / {}", money(given), money(c)),
                None => format!("{} (no budget)", money(given)),
            },
            budget_pct: cap
                .filter(|c| *c > 0)
                .map_or(0, |c| (given * 100 / c).clamp(0, 100)),
            updated: instant(&t["updated_at"]),
            low: stock > 0 && remaining * 20 < stock,
            expires_at: t["expires_at"].as_str().unwrap_or("").to_owned(),
            given_minor: given,
            updated_at: t["updated_at"].as_str().unwrap_or("").to_owned(),
        }
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
    fn money_reads_in_major_units() {
        assert_eq!(money(0), "0.00");
        assert_eq!(money(20_000), "200.00");
        assert_eq!(money(123_456_789), "1,234,567.89");
        assert_eq!(money(-5), "-0.05");
    }

    #[test]
    fn template_rows_sort_by_the_column_chosen() {
        let row = |id: i64, title: &str, claimed: i64, given: i64| {
            TemplateRow::of(&json!({"id": id, "title": title, "total_stock": 100,
                "claimed": claimed, "given": given, "status": "active"}))
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
        assert_eq!(
            value(&json!({"kind": "amount_off", "amount": 20000})),
            "200.00 off"
        );
        assert_eq!(
            value(&json!({"kind": "percent_off", "bps": 1500, "cap": 5000})),
            "15 % off (up to 50.00)"
        );
        assert_eq!(
            value(&json!({"kind": "buy_x_get_y", "buy": 2, "get": 1})),
            "buy 2 get 1"
        );
    }
}
