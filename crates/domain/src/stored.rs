//! The invariants every stored record keeps, whichever coupond version wrote it.
//!
//! These are what the arithmetic relies on (stock and limits at least one, values that give a
//! discount, windows that end after they start), checked when a record is read back. They are
//! deliberately looser than the validation of a request (`TemplateSpec::validate`,
//! `ActivitySpec::try_from`), whose policy limits (text lengths, list sizes, ranges) may change
//! between versions: a record that was valid when written stays readable.

use crate::{ActivityDraft, CouponValue, DomainError, Money, TemplateDraft, Validity};

fn broken(field: &str, message: &str) -> DomainError {
    DomainError::invalid(field, "stored_invariant", message)
}

impl TemplateDraft {
    /// Checks the stored-template invariants.
    pub fn check_stored(&self) -> Result<(), DomainError> {
        if self.total_stock < 1 {
            return Err(broken("total_stock", "a template has at least one coupon"));
        }
        if self.per_user_limit < 1 {
            return Err(broken("per_user_limit", "a user may hold at least one"));
        }
        if self.use_limits.iter().any(|l| l.max < 1) {
            return Err(broken("use_limits", "a use limit allows at least one use"));
        }
        if self.budget.is_some_and(|b| b.minor() < 1) {
            return Err(broken("budget", "a budget, when set, is at least 1"));
        }
        let zero = |m: Option<Money>| m.is_some_and(|m| m.minor() < 1);
        match self.value {
            CouponValue::AmountOff { amount } if amount.minor() < 1 => {
                return Err(broken("value.amount", "an amount off is at least 1"))
            }
            CouponValue::PercentOff { bps, cap } if bps.get() < 1 || zero(cap) => {
                return Err(broken("value", "a percentage off takes at least 1 bp"))
            }
            CouponValue::FreeDays { days } if days < 1 => {
                return Err(broken("value.days", "free days are at least 1"))
            }
            CouponValue::DepositWaiver { cap } | CouponValue::FreeShipping { cap } if zero(cap) => {
                return Err(broken("value.cap", "a cap, when set, is at least 1"))
            }
            // The arithmetic divides by `buy + get` and by `get`.
            CouponValue::BuyXGetY {
                buy,
                get,
                max_applications,
                ..
            } if buy < 1 || get < 1 || max_applications.is_some_and(|n| n < 1) => {
                return Err(broken(
                    "value",
                    "buy and get are at least 1, max_applications at least 1 when set",
                ))
            }
            _ => {}
        }
        match self.validity {
            Validity::Fixed { from, until } if from >= until => {
                Err(broken("validity", "a fixed validity ends after it starts"))
            }
            Validity::Relative { days } if days < 1 => Err(broken(
                "validity.days",
                "a relative validity is at least a day",
            )),
            _ => Ok(()),
        }
    }
}

impl ActivityDraft {
    /// Checks the stored-activity invariants.
    pub fn check_stored(&self) -> Result<(), DomainError> {
        if self.value_min < 0 || self.value_min > self.value_max {
            return Err(broken("value_max", "value bounds are 0 <= min <= max"));
        }
        if self.enrollment.end > self.run.start {
            return Err(broken(
                "enrollment",
                "enrollment ends before the run starts",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn activity() -> ActivityDraft {
        serde_json::from_str(
            r#"{"title":"t","cities":[1],"kind":"amount_off","value_min":1,"value_max":5,
            "enrollment":{"start":"2026-01-01T00:00:00Z","end":"2026-01-02T00:00:00Z"},
            "run":{"start":"2026-01-02T00:00:00Z","end":"2026-01-03T00:00:00Z"}}"#,
        )
        .unwrap()
    }

    fn template(value: serde_json::Value) -> TemplateDraft {
        serde_json::from_value(serde_json::json!({
            "title": "t", "value": value, "cities": [1], "total_stock": 10,
            "validity": {"type": "relative", "days": 30}
        }))
        .unwrap()
    }

    #[test]
    fn new_kinds_keep_what_the_arithmetic_needs() {
        use serde_json::json;
        // Looser than a request (get 5000 is above 1000), but never a zero divisor.
        for ok in [
            json!({"kind": "free_shipping"}),
            json!({"kind": "free_shipping", "cap": 1}),
            json!({"kind": "buy_x_get_y", "buy": 1, "get": 5000, "max_applications": 1}),
        ] {
            assert!(template(ok.clone()).check_stored().is_ok(), "{ok}");
        }
        for (broken, field) in [
            (json!({"kind": "free_shipping", "cap": 0}), "value.cap"),
            (json!({"kind": "buy_x_get_y", "buy": 0, "get": 1}), "value"),
            (json!({"kind": "buy_x_get_y", "buy": 1, "get": 0}), "value"),
            (
                json!({"kind": "buy_x_get_y", "buy": 1, "get": 1, "max_applications": 0}),
                "value",
            ),
        ] {
            let e = template(broken.clone()).check_stored().unwrap_err();
            assert_eq!(
                (e.field.as_deref(), e.code),
                (Some(field), "stored_invariant"),
                "{broken}"
            );
        }
    }

    #[test]
    fn activity_bounds_and_windows_are_checked() {
        assert!(activity().check_stored().is_ok());
        let mut a = activity();
        a.value_min = 6;
        assert_eq!(
            a.check_stored().unwrap_err().field.as_deref(),
            Some("value_max")
        );
        let mut a = activity();
        std::mem::swap(&mut a.enrollment, &mut a.run);
        assert_eq!(
            a.check_stored().unwrap_err().field.as_deref(),
            Some("enrollment")
        );
    }
}
