//! What a template's page says about its terms (value, threshold, cities, per-user limit,
//! stacking, audience, validity, refund policy, its activity) and its change history, in
//! words, from the API's answers.

use coupond_api::routes::templates::TemplateChangeView;
use coupond_api::views::TemplateView;
use coupond_domain::{Audience, RefundPolicy, Stacking, Validity};
use serde_json::Value;

use crate::views::format::{at, money, worth};
use crate::views::names::CityNames;

/// One line of the terms: its element id, its label and what it says.
#[derive(Debug, Clone)]
pub struct Fact {
    pub id: &'static str,
    pub label: &'static str,
    pub text: String,
}

/// The template's terms, in the order the page lists them (its claim window and validity
/// are beside them, with their own forms).
pub fn facts(t: &TemplateView, cities: &CityNames) -> Vec<Fact> {
    let d = &t.terms;
    let fact = |id, label, text: String| Fact { id, label, text };
    let mut out = vec![
        fact("fact-value", "Value", worth(&d.value)),
        fact(
            "fact-threshold",
            "Order threshold",
            match d.threshold.minor() {
                0 => "none".into(),
                n => format!("orders of {} or more", money(n)),
            },
        ),
        fact("fact-cities", "Cities", cities.list(d.cities.iter())),
        fact(
            "fact-per-user",
            "Per user",
            format!(
                "at most {} coupon{}",
                d.per_user_limit,
                plural(d.per_user_limit)
            ),
        ),
        fact(
            "fact-stacking",
            "Stacking",
            match d.stacking {
                Stacking::Exclusive => "exclusive: alone on an order".into(),
                Stacking::Stackable => "stackable with other stackable coupons".into(),
            },
        ),
        fact("fact-audience", "Who may claim", audience(&d.audience)),
        fact("fact-validity", "Usable", validity(&d.validity)),
        fact(
            "fact-refund",
            "When an order is refunded",
            match d.refund_policy {
                RefundPolicy::Return => "the coupon goes back to its holder".into(),
                RefundPolicy::Void => "the coupon is voided".into(),
            },
        ),
    ];
    if let Some(days) = d.reminder_days_before {
        let text = format!("{days} day{} before a coupon expires", plural(days));
        out.push(fact("fact-reminder", "Reminder", text));
    }
    if !d.reference.is_empty() {
        out.push(fact("fact-reference", "Reference", reference(&d.reference)));
    }
    if !d.description.is_empty() {
        out.insert(
            0,
            fact("fact-description", "Description", d.description.clone()),
        );
    }
    out
}

/// "CRM-2026-0042 (spring-campaign, from crm)".
fn reference(r: &coupond_domain::Reference) -> String {
    let about: Vec<String> = [
        r.label.clone(),
        r.source.as_ref().map(|s| format!("from {s}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    let id = r.external_id.clone().unwrap_or_else(|| "no id".into());
    match about.is_empty() {
        true => id,
        false => format!("{id} ({})", about.join(", ")),
    }
}

fn plural(n: u32) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn audience(a: &Audience) -> String {
    match a {
        Audience::Everyone => "everyone".into(),
        Audience::Users { ids } => {
            let first: Vec<String> = ids.iter().take(10).map(ToString::to_string).collect();
            let more = ids.len().saturating_sub(10);
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            format!(
                "only {} user{}: {}{more}",
                ids.len(),
                if ids.len() == 1 { "" } else { "s" },
                first.join(", ")
            )
        }
        Audience::Tags { any } => {
            let tags: Vec<String> = any.iter().map(ToString::to_string).collect();
            format!("users holding any of the tags {}", tags.join(", "))
        }
    }
}

fn validity(v: &Validity) -> String {
    match v {
        Validity::Relative { days } => format!("for {days} days after claiming"),
        Validity::Fixed { from, until } => format!("from {} to {}", at(*from), at(*until)),
    }
}

/// One change of the terms: when, who, and each field from what to what.
#[derive(Debug, Clone)]
pub struct Change {
    pub at: String,
    pub actor: String,
    pub fields: Vec<(String, String, String)>,
}

/// The API's history in words, newest first.
pub fn changes(items: &[TemplateChangeView]) -> Vec<Change> {
    items
        .iter()
        .rev()
        .map(|c| Change {
            at: at(c.at),
            actor: c.actor.clone(),
            fields: c
                .changes
                .as_object()
                .into_iter()
                .flatten()
                .map(|(field, v)| (field.clone(), shown(&v["from"]), shown(&v["to"])))
                .collect(),
        })
        .collect()
}

/// A value of the history as text: strings bare, anything else as its JSON.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "none".into(),
        other => other.to_string(),
    }
}
