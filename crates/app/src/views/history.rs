//! A coupon's operation log, as its holder, its merchant and the platform read it.

use coupond_domain::{CouponAction, CouponId, CouponStatus, TemplateId, Timestamp, UserId};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// One status change of a coupon.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct HistoryEntry {
    /// Absent for the change that created the coupon.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<CouponStatus>,
    pub to: CouponStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_id: Option<String>,
    /// `platform`, `merchant:<id>`, `service`, `user:<id>` or `system`.
    pub actor: String,
    /// Why, when a person said so (a revoke, a refund).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub at: Timestamp,
}

/// The order holding a locked coupon, and until when.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct HeldBy {
    pub order_id: String,
    /// The lock's deadline (`POST /v1/orders/{order_id}/extend` moves it later).
    pub until: Timestamp,
}

/// A coupon's operation log.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct HistoryView {
    pub coupon_id: CouponId,
    pub template_id: TemplateId,
    pub user_id: UserId,
    pub status: CouponStatus,
    /// While an order holds it (`locked`): the order and the lock's deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_by: Option<HeldBy>,
    pub events: Vec<HistoryEntry>,
    /// What the caller may do to it now (the platform, its merchant, a role that helps users:
    /// `revoke`); absent for its holder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<CouponAction>>,
}
