//! The template form's fields, shared by creating a template (standalone or enrolling in an
//! activity) and editing a draft: what a person types (money in major units, percentages in
//! %, instants in UTC) read into a typed draft or patch, and back from a template's terms.
//! The application checks every rule; the form only reads each field into its type, naming
//! the field it could not read.

use coupond_domain::{
    Audience, BasisPoints, CityId, CitySet, CouponValue, Gift, Money, Priority, StackingGroup, Tag,
    TemplateDraft, TemplatePatch, Timestamp, UserId, Validity, Window,
};
use serde::de::value::StrDeserializer;
use serde::de::{DeserializeOwned, IntoDeserializer};
use serde::Deserialize;

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
    /// At most one coupon of a group applies to an order (optional).
    #[serde(default)]
    pub stacking_group: String,
    /// 0 to 1000: higher applies first (empty: 0).
    #[serde(default)]
    pub priority: String,
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
            stacking_group: t
                .stacking_group
                .as_ref()
                .map(|g| g.to_string())
                .unwrap_or_default(),
            priority: match t.priority.get() {
                0 => String::new(),
                p => p.to_string(),
            },
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

/// A field the console could not read (its path in the template, the form showing the message
/// at its first segment: `validity.from` at `validity`), and why.
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

/// A whole number that fits `T` (a count, days), or why not.
fn count<T: TryFrom<i64>>(field: &'static str, s: &str) -> Result<T, Bad> {
    T::try_from(whole(field, s)?).map_err(|_| (field, "this number is out of range".to_owned()))
}

/// An amount in major units (`12.50`) as money.
fn money(field: &'static str, s: &str) -> Result<Money, Bad> {
    Money::new(hundredths(field, s)?).map_err(|why| (field, why))
}

/// One of a select's words (`stackable`, `void`) as its type.
fn chosen<T: DeserializeOwned>(field: &'static str, s: &str) -> Result<T, Bad> {
    let word: StrDeserializer<'_, serde::de::value::Error> = s.into_deserializer();
    T::deserialize(word).map_err(|_| (field, "not one of the choices".to_owned()))
}

/// An instant typed in UTC (`2026-11-24T12:00`).
fn instant(field: &'static str, s: &str) -> Result<Timestamp, Bad> {
    Timestamp::parse(&utc(s)).map_err(|why| (field, why))
}

/// The value from the form's kind and fields.
fn value(f: &TemplateForm) -> Result<CouponValue, Bad> {
    let cap = || optional(&f.cap, |s| money("cap", s));
    Ok(match f.kind.as_str() {
        "amount_off" => CouponValue::AmountOff {
            amount: money("value", &f.value)?,
        },
        "percent_off" => CouponValue::PercentOff {
            bps: BasisPoints::new(hundredths("value", &f.value)?).map_err(|why| ("value", why))?,
            cap: cap()?,
        },
        "free_days" => CouponValue::FreeDays {
            days: count("value", &f.value)?,
        },
        "special_price" => CouponValue::SpecialPrice {
            price: money("value", &f.value)?,
        },
        "deposit_waiver" => CouponValue::DepositWaiver { cap: cap()? },
        "free_shipping" => CouponValue::FreeShipping { cap: cap()? },
        "buy_x_get_y" => CouponValue::BuyXGetY {
            buy: count("buy", &f.buy)?,
            get: count("get", &f.get)?,
            max_applications: optional(&f.max_applications, |s| count("max_applications", s))?,
            gift: match f.gift.trim() {
                "" => Gift::default(),
                kept => serde_json::from_str(kept)
                    .map_err(|_| ("value.gift", "not a gift the API knows".to_owned()))?,
            },
        },
        _ => {
            return Err((
                "value.kind",
                "not a kind of coupon the API knows".to_owned(),
            ))
        }
    })
}

/// Who may hold its coupons.
fn audience(f: &TemplateForm) -> Result<Audience, Bad> {
    let list = items(&f.audience_list);
    let bad = |why: String| ("audience.list", why);
    Ok(match f.audience.as_str() {
        "users" => Audience::Users {
            ids: list
                .into_iter()
                .map(UserId::parse)
                .collect::<Result<_, _>>()
                .map_err(bad)?,
        },
        "tags" => Audience::Tags {
            any: list
                .into_iter()
                .map(Tag::parse)
                .collect::<Result<_, _>>()
                .map_err(bad)?,
        },
        _ => Audience::Everyone,
    })
}

/// How long a claimed coupon is usable.
fn validity(f: &TemplateForm) -> Result<Validity, Bad> {
    Ok(match f.validity.as_str() {
        "fixed" => Validity::Fixed {
            from: instant("validity.from", &f.valid_from)?,
            until: instant("validity.until", &f.valid_until)?,
        },
        _ => Validity::Relative {
            days: count("validity", &f.validity_days)?,
        },
    })
}

/// The cities, as ids separated by commas.
fn cities(f: &TemplateForm) -> Result<CitySet, Bad> {
    let ids: Option<Vec<CityId>> = items(&f.cities)
        .into_iter()
        .map(|c| c.parse::<i64>().ok().and_then(|c| CityId::new(c).ok()))
        .collect();
    let ids = ids.ok_or(("cities", "city ids, separated by commas".to_owned()))?;
    CitySet::new(ids).map_err(|why| ("cities", why))
}

/// The template the form describes (the activity is set by the caller that creates it; a
/// standalone template's claim window comes from the form): every term the form has, read
/// into its type, a field that cannot be read named with why. The application checks every
/// rule of the template as a whole.
pub fn terms(f: &TemplateForm) -> Result<TemplateDraft, Bad> {
    let standalone = f.activity_id.trim().parse::<i64>().is_err();
    let claim_window = match standalone {
        true => {
            let (start, end) = (
                instant("claim_window.start", &f.claim_start)?,
                instant("claim_window.end", &f.claim_end)?,
            );
            Some(Window::new(start, end).map_err(|why| ("claim_window.end", why))?)
        }
        false => None,
    };
    Ok(TemplateDraft {
        activity_id: None,
        title: f.title.clone(),
        description: f.description.clone(),
        value: value(f)?,
        threshold: optional(&f.threshold, |s| money("threshold", s))?.unwrap_or_default(),
        deduction: Default::default(),
        scope: Default::default(),
        conditions: None,
        rule_id: None,
        use_limits: Vec::new(),
        stacking_group: optional(&f.stacking_group, |s| {
            StackingGroup::parse(s).map_err(|e| ("stacking_group", e.message))
        })?,
        priority: optional(&f.priority, |s| {
            Priority::new(count("priority", s)?).map_err(|e| ("priority", e.message))
        })?
        .unwrap_or_default(),
        cities: cities(f)?,
        audience: audience(f)?,
        total_stock: whole("total_stock", &f.total_stock)?,
        per_user_limit: count("per_user_limit", &f.per_user_limit)?,
        stacking: optional(&f.stacking, |s| chosen("stacking", s))?.unwrap_or_default(),
        claim_window,
        validity: validity(f)?,
        budget: optional(&f.budget, |s| money("budget", s))?,
        metadata: Default::default(),
        refund_policy: optional(&f.refund_policy, |s| chosen("refund_policy", s))?
            .unwrap_or_default(),
        reminder_days_before: None,
        reference: Default::default(),
    })
}

/// The change the edit form makes to a draft: every term the form shows, the rest (its scope,
/// metadata, reminder and reference) kept as they are.
pub fn patch(f: &TemplateForm) -> Result<TemplatePatch, Bad> {
    let t = terms(f)?;
    Ok(TemplatePatch {
        title: Some(t.title),
        description: Some(t.description),
        value: Some(t.value),
        threshold: Some(t.threshold),
        cities: Some(t.cities),
        audience: Some(t.audience),
        total_stock: Some(t.total_stock),
        per_user_limit: Some(t.per_user_limit),
        stacking: (!f.stacking.trim().is_empty()).then_some(t.stacking),
        stacking_group: Some(t.stacking_group),
        priority: Some(t.priority),
        claim_window: t.claim_window,
        validity: Some(t.validity),
        budget: Some(t.budget),
        refund_policy: (!f.refund_policy.trim().is_empty()).then_some(t.refund_policy),
        ..TemplatePatch::default()
    })
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
        (f.stacking_group, f.priority) = ("weekend".into(), "20".into());
        let draft = terms(&f).unwrap();
        assert_eq!(draft.priority.get(), 20);
        assert_eq!(
            draft.value,
            CouponValue::BuyXGetY {
                buy: 2,
                get: 1,
                gift: Gift::Cheapest,
                max_applications: Some(3)
            }
        );
        assert_eq!(
            (draft.budget, draft.threshold),
            (Some(Money::new(12_050).unwrap()), Money::ZERO)
        );
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
        assert_eq!(
            (back.stacking_group.as_str(), back.priority.as_str()),
            ("weekend", "20")
        );
        f.priority = "1001".into();
        assert_eq!(terms(&f).unwrap_err().0, "priority");
        f.priority = String::new();
        f.stacking_group = "two words".into();
        assert_eq!(terms(&f).unwrap_err().0, "stacking_group");
        f.stacking_group = String::new();
        f.cap = "ten".into();
        f.kind = "percent_off".into();
        f.value = "10".into();
        assert_eq!(terms(&f).unwrap_err().0, "cap");
    }
}
