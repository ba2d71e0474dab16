//! The texts of messages: a subject, a body and a short SMS text per kind and locale, with
//! `{{variable}}` placeholders. A text is checked when saved (every placeholder known to its
//! kind, lengths bounded), so filling it in never fails.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::MessageKind;
use crate::error::{DomainError, Findings};
use crate::text::check_text;

/// Most characters of a subject, a body and an SMS text.
pub const MAX_SUBJECT: usize = 200;
pub const MAX_BODY: usize = 5_000;
/// Three SMS segments of Unicode text.
pub const MAX_SMS: usize = 201;

/// The values a text is filled with, by variable name.
pub type Vars = BTreeMap<&'static str, String>;

/// One kind's text in one locale.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageText {
    /// The email's subject and the inbox's title.
    pub subject: String,
    /// The email's and the inbox's body; blank lines separate paragraphs.
    pub body: String,
    /// The SMS text.
    pub sms: String,
}

impl MessageText {
    /// Checks the text for `kind`: lengths, visible characters, and every `{{name}}` one the
    /// kind provides. Every bad field is reported at once.
    pub fn check(&self, kind: MessageKind) -> Result<(), DomainError> {
        let mut f = Findings::default();
        for (field, text, max) in [
            ("subject", &self.subject, MAX_SUBJECT),
            ("body", &self.body, MAX_BODY),
            ("sms", &self.sms, MAX_SMS),
        ] {
            f.check(check_one(field, text, max, kind));
        }
        f.done()
    }

    /// The text with `vars` filled in (a variable without a value reads as empty).
    pub fn render(&self, vars: &Vars) -> MessageText {
        MessageText {
            subject: render(&self.subject, vars),
            body: render(&self.body, vars),
            sms: render(&self.sms, vars),
        }
    }
}

fn check_one(field: &str, text: &str, max: usize, kind: MessageKind) -> Result<(), DomainError> {
    check_text(field, text, 1, max)?;
    for name in placeholders(text).map_err(|m| DomainError::invalid(field, "bad_placeholder", m))? {
        if !kind.variables().contains(&name) {
            return Err(DomainError::invalid(
                field,
                "unknown_variable",
                format!(
                    "{{{{{name}}}}} is not a variable of {}; it has {}",
                    kind.as_str(),
                    kind.variables()
                        .iter()
                        .map(|v| format!("{{{{{v}}}}}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// The names of `text`'s placeholders, or what is wrong with one.
fn placeholders(text: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let close = after.find("}}").ok_or("a {{ without its closing }}")?;
        let name = after[..close].trim();
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
            return Err(format!("{{{{{name}}}}} is not a variable name"));
        }
        out.push(name);
        rest = &after[close + 2..];
    }
    Ok(out)
}

/// Fills `{{name}}` placeholders from `vars`; text outside them is kept as it is.
pub fn render(text: &str, vars: &Vars) -> String {
    let mut out = String::with_capacity(text.len() + 32);
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else {
            out.push_str(&rest[open..]);
            return out;
        };
        if let Some(v) = vars.get(after[..close].trim()) {
            out.push_str(v);
        }
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    out
}

/// The text coupond ships for `kind` in `locale` (`en` or `zh-Hans`; `None` for others).
pub fn shipped(kind: MessageKind, locale: &str) -> Option<MessageText> {
    let (subject, body, sms) = match locale {
        "en" => english(kind),
        "zh-Hans" => chinese(kind),
        _ => return None,
    };
    Some(MessageText {
        subject: subject.into(),
        body: body.into(),
        sms: sms.into(),
    })
}

/// The locales coupond ships texts in.
pub const SHIPPED_LOCALES: [&str; 2] = ["en", "zh-Hans"];

fn english(kind: MessageKind) -> (&'static str, &'static str, &'static str) {
    match kind {
        MessageKind::CouponIssued => (
            "You received a coupon: {{title}}",
            "“{{title}}” ({{value}}) is in your wallet. It is valid until {{valid_until}}.",
            "You received a coupon: {{title}} ({{value}}), valid until {{valid_until}}.",
        ),
        MessageKind::CouponClaimed => (
            "Your coupon: {{title}}",
            "You claimed “{{title}}” ({{value}}). It is valid until {{valid_until}}.",
            "You claimed {{title}} ({{value}}), valid until {{valid_until}}.",
        ),
        MessageKind::CouponExpiring => (
            "Expiring soon: {{title}}",
            "Your coupon “{{title}}” ({{value}}) expires on {{valid_until}}. Use it before then.",
            "Your coupon {{title}} expires on {{valid_until}}. Use it before then.",
        ),
        MessageKind::CouponRevoked => (
            "A coupon was withdrawn: {{title}}",
            "Your coupon “{{title}}” ({{value}}) was withdrawn: {{reason}}",
            "Your coupon {{title}} was withdrawn: {{reason}}",
        ),
        MessageKind::EnrollmentApproved => (
            "Approved for {{activity}}: {{title}}",
            "Your coupon “{{title}}” was approved for the activity “{{activity}}”.",
            "{{title}} was approved for {{activity}}.",
        ),
        MessageKind::EnrollmentRejected => (
            "Not accepted for {{activity}}: {{title}}",
            "Your coupon “{{title}}” was not accepted for the activity “{{activity}}”: {{reason}}",
            "{{title}} was not accepted for {{activity}}: {{reason}}",
        ),
        MessageKind::Campaign => ("{{title}}", "{{message}}", "{{message}}"),
        MessageKind::OperatorInvited => (
            "{{merchant}} invites you to its coupon console",
            "{{merchant}} invites you to its team on the coupon console as {{role}}. Choose a \
             password at {{link}} before {{valid_until}} to accept. If you did not expect this, \
             ignore this email.",
            "{{merchant}} invites you to its coupon console: {{link}}",
        ),
    }
}

fn chinese(kind: MessageKind) -> (&'static str, &'static str, &'static str) {
    match kind {
        MessageKind::CouponIssued => (
            "您收到一张优惠券：{{title}}",
            "“{{title}}”（{{value}}）已放入您的卡包，有效期至 {{valid_until}}。",
            "您收到一张优惠券：{{title}}（{{value}}），有效期至 {{valid_until}}。",
        ),
        MessageKind::CouponClaimed => (
            "领取成功：{{title}}",
            "您已领取“{{title}}”（{{value}}），有效期至 {{valid_until}}。",
            "您已领取{{title}}（{{value}}），有效期至 {{valid_until}}。",
        ),
        MessageKind::CouponExpiring => (
            "优惠券即将过期：{{title}}",
            "您的优惠券“{{title}}”（{{value}}）将于 {{valid_until}} 过期，请尽快使用。",
            "您的优惠券{{title}}将于 {{valid_until}} 过期，请尽快使用。",
        ),
        MessageKind::CouponRevoked => (
            "优惠券已收回：{{title}}",
            "您的优惠券“{{title}}”（{{value}}）已被收回：{{reason}}",
            "您的优惠券{{title}}已被收回：{{reason}}",
        ),
        MessageKind::EnrollmentApproved => (
            "报名已通过：{{activity}}",
            "您的优惠券“{{title}}”已通过活动“{{activity}}”的审核。",
            "{{title}}已通过活动{{activity}}的审核。",
        ),
        MessageKind::EnrollmentRejected => (
            "报名未通过：{{activity}}",
            "您的优惠券“{{title}}”未通过活动“{{activity}}”的审核：{{reason}}",
            "{{title}}未通过活动{{activity}}的审核：{{reason}}",
        ),
        MessageKind::Campaign => ("{{title}}", "{{message}}", "{{message}}"),
        MessageKind::OperatorInvited => (
            "{{merchant}} 邀请您加入优惠券后台",
            "{{merchant}} 邀请您以 {{role}} 身份加入其优惠券后台团队。请在 {{valid_until}} 之前\
             访问 {{link}} 设置密码以接受邀请。如非本人操作，请忽略此邮件。",
            "{{merchant}} 邀请您加入优惠券后台：{{link}}",
        ),
    }
}

/// What a coupon is worth, in words of `locale` (English or Simplified Chinese), money in
/// major units (`20.00 off`, `减 20.00`).
pub fn worth(v: &crate::coupon::CouponValue, locale: &str) -> String {
    use crate::coupon::CouponValue as V;
    let zh = locale.starts_with("zh");
    let m = |minor: i64| format!("{}.{:02}", minor / 100, (minor % 100).abs());
    let pct = |bps: u16| {
        let whole = bps / 100;
        match bps % 100 {
            0 => format!("{whole}"),
            r => format!("{whole}.{r:02}"),
        }
    };
    let cap = |c: &Option<crate::Money>| match (c, zh) {
        (Some(c), false) => format!(" (up to {})", m(c.minor())),
        (Some(c), true) => format!("（最高 {}）", m(c.minor())),
        (None, _) => String::new(),
    };
    match (v, zh) {
        (V::AmountOff { amount }, false) => format!("{} off", m(amount.minor())),
        (V::AmountOff { amount }, true) => format!("减 {}", m(amount.minor())),
        (V::PercentOff { bps, cap: c }, false) => format!("{}% off{}", pct(bps.get()), cap(c)),
        (V::PercentOff { bps, cap: c }, true) => format!("{}% 折扣{}", pct(bps.get()), cap(c)),
        (V::FreeDays { days }, false) => {
            format!("{days} free day{}", if *days == 1 { "" } else { "s" })
        }
        (V::FreeDays { days }, true) => format!("免租 {days} 天"),
        (V::DepositWaiver { cap: c }, false) => format!("deposit waived{}", cap(c)),
        (V::DepositWaiver { cap: c }, true) => format!("免押金{}", cap(c)),
        (V::SpecialPrice { price }, false) => format!("special price {}", m(price.minor())),
        (V::SpecialPrice { price }, true) => format!("特价 {}", m(price.minor())),
        (V::FreeShipping { cap: c }, false) => format!("free shipping{}", cap(c)),
        (V::FreeShipping { cap: c }, true) => format!("免运费{}", cap(c)),
        (V::BuyXGetY { buy, get, .. }, false) => format!("buy {buy} get {get}"),
        (V::BuyXGetY { buy, get, .. }, true) => format!("买 {buy} 送 {get}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_text_passes_its_own_check() {
        for kind in MessageKind::ALL {
            for locale in SHIPPED_LOCALES {
                let t = shipped(kind, locale).unwrap();
                t.check(kind)
                    .unwrap_or_else(|e| panic!("{kind:?} {locale}: {e}"));
            }
        }
    }

    #[test]
    fn unknown_variables_and_broken_braces_are_refused() {
        let t = MessageText {
            subject: "Hi {{name}}".into(),
            body: "{{title".into(),
            sms: "ok".into(),
        };
        let e = t.check(MessageKind::CouponClaimed).unwrap_err();
        assert_eq!(
            (e.code, e.field.as_deref()),
            ("unknown_variable", Some("subject"))
        );
        assert_eq!(e.also[0].code, "bad_placeholder");
    }

    #[test]
    fn rendering_fills_known_values_and_keeps_the_rest() {
        let vars = Vars::from([("title", "Spring <sale>".to_owned())]);
        assert_eq!(
            render("Use {{title}} by {{valid_until}}.", &vars),
            "Use Spring <sale> by ."
        );
        assert_eq!(render("odd {{title", &vars), "odd {{title");
    }
}
