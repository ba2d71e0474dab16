//! The settlement as every front door shows it ([`SettlementReport`]): what the platform owes
//! each merchant for its share of the discounts ([`coupond_engine::settlement`]), as JSON and
//! CSV.

use coupond_domain::{ActivityId, CsvWriter, MerchantId, TemplateId, Timestamp};
use coupond_engine::reports;
use coupond_engine::settlement::{MerchantSettlement, Settlement};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::check_period;
use crate::caller::Principal;
use crate::context::App;
use crate::error::{AppError, AppResult};

/// How each discount is split, in words.
const ROUNDING: &str = "each coupon's discount split on its own: the platform's part rounded \
                        half away from zero, the merchant's the rest; a refund takes back the \
                        parts its use gave";

/// One template's line: its uses and refunds in the period and the platform's part of them.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SettlementLine {
    pub template_id: TemplateId,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activity_id: Option<ActivityId>,
    /// The platform's share of each discount, in basis points.
    pub platform_bps: u16,
    pub coupons_used: i64,
    pub discount: i64,
    /// The platform's part of `discount`.
    pub platform_given: i64,
    pub coupons_refunded: i64,
    pub refunded_discount: i64,
    /// The platform's part of `refunded_discount`.
    pub platform_refunded: i64,
    /// `platform_given - platform_refunded`.
    pub platform_owes: i64,
}

/// One merchant's settlement.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct MerchantOwed {
    pub merchant_id: MerchantId,
    pub platform_given: i64,
    pub platform_refunded: i64,
    /// What the platform owes the merchant for the period.
    pub owed: i64,
    pub lines: Vec<SettlementLine>,
}

/// The settlement of a period.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct SettlementReport {
    pub from: Timestamp,
    pub to: Timestamp,
    /// The currency of every amount (`platform.currency`).
    pub currency: String,
    /// The rounding rule, in words.
    pub rounding: String,
    pub merchants: Vec<MerchantOwed>,
    /// What the platform owes every merchant listed.
    pub total_owed: i64,
}

impl App {
    /// The settlement of `[from, to)` between the platform and the merchants: of `merchant`
    /// (a merchant's is its own), or of every merchant.
    pub async fn settlement(
        &self,
        p: &Principal,
        (from, to): (Timestamp, Timestamp),
        merchant: Option<MerchantId>,
    ) -> AppResult<SettlementReport> {
        check_period(from, to)?;
        let only = match (p.merchant(), merchant) {
            (Some(me), Some(asked)) if me != asked => return Err(AppError::NotFound),
            (Some(me), _) => Some(me),
            (None, asked) => asked,
        };
        if let Some(m) = only {
            self.store().merchant(m).await?;
        }
        let r = reports::reconciliation(self.store(), from, to).await?;
        let settled = Settlement::of(&r, only);
        Ok(SettlementReport {
            from: settled.from,
            to: settled.to,
            currency: self.currency().to_string(),
            rounding: ROUNDING.to_owned(),
            total_owed: settled.total_owed(),
            merchants: settled.merchants.iter().map(owed).collect(),
        })
    }
}

impl SettlementReport {
    /// One CSV line per template line, with its merchant; titles kept from being formulas.
    pub fn to_csv(&self) -> String {
        let mut w = CsvWriter::with_header(&[
            "merchant_id",
            "template_id",
            "title",
            "activity_id",
            "platform_bps",
            "coupons_used",
            "discount",
            "platform_given",
            "coupons_refunded",
            "refunded_discount",
            "platform_refunded",
            "platform_owes",
        ]);
        for m in &self.merchants {
            for x in &m.lines {
                w.number(m.merchant_id.get())
                    .number(x.template_id.get())
                    .text(&x.title)
                    .optional_number(x.activity_id.map(|a| a.get()))
                    .number(i64::from(x.platform_bps))
                    .number(x.coupons_used)
                    .number(x.discount)
                    .number(x.platform_given)
                    .number(x.coupons_refunded)
                    .number(x.refunded_discount)
                    .number(x.platform_refunded)
                    .number(x.platform_owes)
                    .end_line();
            }
        }
        w.finish()
    }
}

fn owed(m: &MerchantSettlement) -> MerchantOwed {
    MerchantOwed {
        merchant_id: m.merchant_id,
        platform_given: m.platform_given,
        platform_refunded: m.platform_refunded,
        owed: m.owed(),
        lines: m
            .lines
            .iter()
            .map(|x| {
                let (given, refunded) = (x.given(), x.refunded());
                SettlementLine {
                    template_id: x.template_id,
                    title: x.title.clone(),
                    activity_id: x.activity_id,
                    platform_bps: x.funding.platform_bps(),
                    coupons_used: x.coupons_used,
                    discount: x.discount.minor(),
                    platform_given: given.platform,
                    coupons_refunded: x.coupons_refunded,
                    refunded_discount: x.refunded_discount.minor(),
                    platform_refunded: refunded.platform,
                    platform_owes: given.platform - refunded.platform,
                }
            })
            .collect(),
    }
}
