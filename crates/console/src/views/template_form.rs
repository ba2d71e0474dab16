//! The template form's fields, shared by creating a template (standalone or enrolling in an
//! activity) and editing a draft: what a person types (money in major units, percentages in
//! %, instants in UTC) into the API's body, and back from a template's terms. The API checks
//! every rule; the form only reads numbers, naming the field it could not read.

use coupond_domain::{Audience, CouponValue, TemplateDraft, Timestamp, Validity};
use serde::Deserialize;
use serde_json::{json, Value};

use super::activities::{utc, Choice};
use super::format::{decimal, hundredths};

/// Every kind the API takes.
pub const KINDS: [(&str, &str); 7] = [
    ("amount_off", "Amount off"),
    ("percent_off", "Percent off"),
    ("free_days", "Free days"),
    ("deposit_waiver", "Deposit waiver"),
    ("special_price", "Special price"),
    ("free_shipping", "Free shipping"),
    ("buy_x_get_y", "Buy X get Y"),
];

/// The selects' options: (name, [(value, label)]).
const STACKING: [(&str, &str); 2] = [
    ("exclusive", "Exclusive: alone on an order"),
    ("stackable", "Stackable with other stackable coupons"),
];
const AUDIENCES: [(&str, &str); 3] = [
    ("everyone", "Everyone"),
    ("users", "Only these users"),
    ("tags", "Users holding any of these tags"),
];
const REFUND_POLICIES: [(&str, &str); 2] = [
    ("return", "Give the coupon back"),
    ("void", "Void the coupon"),
];
const VALIDITIES: [(&str, &str); 2] = [
    ("relative", "For some days after claiming"),
    ("fixed", "Between two dates"),
];

/// The form as sent.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct TemplateForm {
    #[serde(default)]
    pub csrf: String,
    #[serde(default)]
    pub activity_id: String,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub value: String,
    /// The most a percent off, a deposit waiver or free shipping takes (optional).
    #[serde(default)]
    pub cap: String,
    /// Buy X get Y: units paid for and free per application, and the most applications.
    #[serde(default)]
    pub buy: String,
    #[serde(default)]
    pub get: String,
    #[serde(default)]
    pub max_applications: String,
    /// Buy X get Y's gift as the API's JSON, kept through an edit (the cheapest when empty).
    #[serde(default)]
    pub gift: String,
    #[serde(default)]
    pub threshold: String,
    #[serde(default)]
    pub cities: String,
    #[serde(default)]
    pub total_stock: String,
    #[serde(default)]
    pub per_user_limit: String,
    #[serde(default)]
    pub stacking: String,
    /// The cap on all the discount it gives (optional).
    #[serde(default)]
    pub budget: String,
    /// `everyone`, `users` or `tags`, and the users' ids or the tags, separated by commas.
    #[serde(default)]
    pub audience: String,
    #[serde(default)]
    pub audience_list: String,
    #[serde(default)]
    pub refund_policy: String,
    /// `relative` (`validity_days`) or `fixed` (`valid_from` to `valid_until`, UTC).
    #[serde(default)]
    pub validity: String,
    #[serde(default)]
    pub validity_days: String,
    #[serde(default)]
    pub valid_from: String,
    #[serde(default)]
    pub valid_until: String,
    /// Standalone templates only (UTC).
    #[serde(default)]
    pub claim_start: String,
    #[serde(default)]
    pub claim_end: String,
}

/// The form's selects, each option marked as chosen or not.
pub struct Selects {
    pub kinds: Vec<Choice>,
    pub stacking: Vec<Choice>,
    pub audiences: Vec<Choice>,
    pub refund_policies: Vec<Choice>,
    pub validities: Vec<Choice>,
}

fn choices(options: &[(&'static str, &'static str)], chosen: &str) -> Vec<Choice> {
    options
        .iter()
        .map(|(value, label)| Choice {
            value,
            label,
            selected: *value == chosen,
        })
        .collect()
}

impl TemplateForm {
    /// A new template's defaults.
    pub fn fresh() -> Self {
        TemplateForm {
            kind: "amount_off".into(),
            per_user_limit: "1".into(),
            validity: "relative".into(),
            validity_days: "30".into(),
            stacking: "exclusive".into(),
            audience: "everyone".into(),
            refund_policy: "return".into(),
            ..TemplateForm::default()
        }
    }

    /// The selects with this form's choices; `kinds` limits the kinds offered (an activity
    /// decides its templates' kind).
    pub fn selects(&self, kinds: impl Fn(&str) -> bool) -> Selects {
        let offered: Vec<(&str, &str)> = KINDS.into_iter().filter(|(k, _)| kinds(k)).collect();
        Selects {
            kinds: choices(&offered, &self.kind),
            stacking: choices(&STACKING, &self.stacking),
            audiences: choices(&AUDIENCES, &self.audience),
            refund_policies: choices(&REFUND_POLICIES, &self.refund_policy),
            validities: choices(&VALIDITIES, &self.validity),
        }
    }

    /// The form filled from a template's terms (to edit it).
    pub fn of(t: &TemplateDraft) -> Self {
        let mut f = TemplateForm {
            title: t.title.clone(),
            description: t.description.clone(),
            threshold: optional_decimal(t.threshold.minor()),
            cities: list(t.cities.iter().map(|c| c.get().to_string())),
            total_stock: t.total_stock.to_string(),
            per_user_limit: t.per_user_limit.to_string(),
            stacking: word(&t.stacking),
            budget: t.budget.map(|b| decimal(b.minor())).unwrap_or_default(),
            refund_policy: t.refund_policy.as_str().to_owned(),
            ..TemplateForm::default()
        };
        f.value_of(&t.value);
        (f.audience, f.audience_list) = match &t.audience {
            Audience::Everyone => ("everyone".into(), String::new()),
            Audience::Users { ids } => ("users".into(), list(ids.iter().map(|u| u.to_string()))),
            Audience::Tags { any } => ("tags".into(), list(any.iter().map(|t| t.to_string()))),
        };
        match t.validity {
            Validity::Relative { days } => {
                f.validity = "relative".into();
                f.validity_days = days.to_string();
            }
            Validity::Fixed { from, until } => {
                f.validity = "fixed".into();
                (f.valid_from, f.valid_until) = (local(from), local(until));
            }
        }
        if let Some(w) = t.claim_window {
            (f.claim_start, f.claim_end) = (local(w.start), local(w.end));
        }
        f
    }

    /// The value's fields from a template's value.
    fn value_of(&mut self, v: &CouponValue) {
        let cap = |c: &Option<coupond_domain::Money>| c.map(|c| decimal(c.minor()));
        self.kind = v.kind().as_str().to_owned();
        match v {
            CouponValue::AmountOff { amount } => self.value = decimal(amount.minor()),
            CouponValue::PercentOff { bps, cap: c } => {
                self.value = decimal(i64::from(bps.get()));
                self.cap = cap(c).unwrap_or_default();
            }
            CouponValue::FreeDays { days } => self.value = days.to_string(),
            CouponValue::SpecialPrice { price } => self.value = decimal(price.minor()),
            CouponValue::DepositWaiver { cap: c } | CouponValue::FreeShipping { cap: c } => {
                self.cap = cap(c).unwrap_or_default();
            }
            CouponValue::BuyXGetY {
                buy,
                get,
                gift,
                max_applications,
            } => {
                (self.buy, self.get) = (buy.to_string(), get.to_string());
                self.max_applications = max_applications.map(|m| m.to_string()).unwrap_or_default();
                self.gift = serde_json::to_string(gift).unwrap_or_default();
            }
        }
    }
}

/// As [`decimal`], empty for 0 (an optional field left blank).
fn optional_decimal(n: i64) -> String {
    if n == 0 {
        String::new()
    } else {
        decimal(n)
    }
}

fn list(items: impl Iterator<Item = String>) -> String {
    items.collect::<Vec<_>>().join(", ")
}

/// A serde enum's word (`stackable`).
fn word<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// `2026-11-24T12:00:00Z` as `2026-11-24T12:00`, what a datetime-local input takes.
fn local(t: Timestamp) -> String {
    t.to_string().chars().take(16).collect()
}

/// A field the console could not read, and why.
pub type Bad = (&'static str, String);

fn whole(field: &'static str, s: &str) -> Result<i64, Bad> {
    s.trim()
        .parse()
        .map_err(|_| (field, "enter a whole number".to_owned()))
}

/// An optional field: absent when blank.
fn optional<T>(s: &str, read: impl Fn(&str) -> Result<T, Bad>) -> Result<Option<T>, Bad> {
    match s.trim() {
        "" => Ok(None),
        s => read(s).map(Some),
    }
}

/// Comma-separated items, blanks left out.
fn items(s: &str) -> Vec<&str> {
    s.split([',', '\n'])
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

/// The value as the API takes it.
fn value(f: &TemplateForm) -> Result<Value, Bad> {
    let cap = || optional(&f.cap, |s| hundredths("cap", s));
    Ok(match f.kind.as_str() {
        "amount_off" => json!({"kind": "amount_off", "amount": hundredths("value", &f.value)?}),
        "percent_off" => {
            json!({"kind": "percent_off", "bps": hundredths("value", &f.value)?, "cap": cap()?})
        }
        "free_days" => json!({"kind": "free_days", "days": whole("value", &f.value)?}),
        "special_price" => {
            json!({"kind": "special_price", "price": hundredths("value", &f.value)?})
        }
        "buy_x_get_y" => {
            let mut v = json!({
                "kind": "buy_x_get_y",
                "buy": whole("buy", &f.buy)?,
                "get": whole("get", &f.get)?,
                "max_applications": optional(&f.max_applications, |s| whole("max_applications", s))?,
            });
            if !f.gift.trim().is_empty() {
                v["gift"] = serde_json::from_str(&f.gift)
                    .map_err(|_| ("gift", "not a gift the API knows".to_owned()))?;
            }
            v
        }
        other => json!({"kind": other, "cap": cap()?}),
    })
}

/// Who may hold its coupons, as the API takes it.
fn audience(f: &TemplateForm) -> Value {
    let list = items(&f.audience_list);
    match f.audience.as_str() {
        "users" => json!({"type": "users", "ids": list}),
        "tags" => json!({"type": "tags", "any": list}),
        _ => json!({"type": "everyone"}),
    }
}

/// How long a claimed coupon is usable, as the API takes it.
fn validity(f: &TemplateForm) -> Result<Value, Bad> {
    Ok(match f.validity.as_str() {
        "fixed" => {
            json!({"type": "fixed", "from": utc(&f.valid_from), "until": utc(&f.valid_until)})
        }
        _ => json!({"type": "relative", "days": whole("validity", &f.validity_days)?}),
    })
}

/// The API's body from the form: every term but the activity, which only creating sends
/// (`POST /v1/templates` and `PATCH /v1/templates/{id}` take the same terms); a field that
/// cannot be read is named with why.
pub fn terms(f: &TemplateForm) -> Result<Value, Bad> {
    let cities: Result<Vec<i64>, _> = items(&f.cities)
        .into_iter()
        .map(str::parse::<i64>)
        .collect();
    let mut body = json!({
        "title": f.title,
        "description": f.description,
        "value": value(f)?,
        "threshold": optional(&f.threshold, |s| hundredths("threshold", s))?.unwrap_or(0),
        "cities": cities.map_err(|_| ("cities", "city ids, separated by commas".to_owned()))?,
        "total_stock": whole("total_stock", &f.total_stock)?,
        "per_user_limit": whole("per_user_limit", &f.per_user_limit)?,
        "audience": audience(f),
        "validity": validity(f)?,
        "budget": optional(&f.budget, |s| hundredths("budget", s))?,
    });
    for (key, chosen) in [
        ("stacking", &f.stacking),
        ("refund_policy", &f.refund_policy),
    ] {
        if !chosen.is_empty() {
            body[key] = json!(chosen);
        }
    }
    if f.activity_id.trim().parse::<i64>().is_err() {
        body["claim_window"] = json!({"start": utc(&f.claim_start), "end": utc(&f.claim_end)});
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_comes_back_as_it_went() {
        let mut f = TemplateForm::fresh();
        f.title = "Two for one".into();
        f.kind = "buy_x_get_y".into();
        (f.buy, f.get, f.max_applications) = ("2".into(), "1".into(), "3".into());
        (f.cities, f.total_stock, f.budget) = ("1, 2".into(), "50".into(), "120.50".into());
        (f.claim_start, f.claim_end) = ("2026-11-24T13:00".into(), "2026-11-30T00:00".into());
        (f.audience, f.audience_list) = ("tags".into(), "vip, new".into());
        let body = terms(&f).unwrap();
        assert_eq!(
            body["value"],
            json!({"kind": "buy_x_get_y", "buy": 2, "get": 1, "max_applications": 3})
        );
        assert_eq!(
            (&body["budget"], &body["threshold"]),
            (&json!(12_050), &json!(0))
        );
        let draft: TemplateDraft = serde_json::from_value(body).unwrap();
        let back = TemplateForm::of(&draft);
        assert_eq!(
            (
                back.buy.as_str(),
                back.budget.as_str(),
                back.audience_list.as_str()
            ),
            ("2", "120.50", "vip, new")
        );
        assert_eq!(back.claim_end, "2026-11-30T00:00");
        f.cap = "ten".into();
        f.kind = "percent_off".into();
        f.value = "10".into();
        assert_eq!(terms(&f).unwrap_err().0, "cap");
    }
}
