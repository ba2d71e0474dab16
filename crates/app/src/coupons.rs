//! Coupons as the platform and merchants manage them: revoking one, and who holds a
//! template's coupons (each sees only its own templates').

use coupond_domain::{
    Area, Coupon, CouponId, CouponStatus, Note, Template, TemplateId, Timestamp, UserId,
};
use coupond_engine::lifecycle;
use coupond_store::HoldersQuery;

use crate::caller::{roles, Access, Principal, CAMPAIGN_READ};
use crate::context::App;
use crate::error::{AppError, AppResult};
use crate::pages::{finish, PageOf, PageRequest};
use crate::views::{support_actions, CouponView, HeldBy, HistoryEntry, HistoryView};

/// Who may revoke a coupon: the platform's and its merchant's support.
pub const REVOKE: Access = Access {
    roles: roles::PLATFORM_MERCHANT,
    area: Area::Support,
};

/// Who may read a coupon's history: the platform, the merchant owning its template, the user
/// holding it.
pub const HISTORY: Access = Access {
    roles: roles::PLATFORM_MERCHANT_USER,
    area: Area::Read,
};

/// Who may read who holds a template's coupons.
pub const HOLDERS: Access = CAMPAIGN_READ;

/// Which of a template's coupons to read.
#[derive(Clone, Debug, Default)]
pub struct HoldersFilter {
    /// Only this user's.
    pub user: Option<UserId>,
    /// Only those in this status now.
    pub status: Option<CouponStatus>,
}

/// A page of a template's coupons, read at one instant.
#[derive(Debug)]
pub struct Holders {
    pub template: Template,
    pub coupons: PageOf<Coupon>,
    pub at: Timestamp,
}

impl App {
    /// Revokes coupon `id` for `reason`, if `p` may see its template: an unused or locked
    /// coupon becomes `revoked` for good; revoking again answers it.
    pub async fn revoke_coupon(
        &self,
        p: &Principal,
        id: CouponId,
        reason: &Note,
    ) -> AppResult<CouponView> {
        let coupon = self.store().coupon(id).await?;
        let t = self.visible_template(p, coupon.template_id).await?;
        let now = self.now();
        let revoked = lifecycle::revoke_coupon(self.store(), id, reason, &p.actor(), now).await?;
        Ok(CouponView::new(revoked, &t, now))
    }

    /// Coupon `id`'s status changes, oldest first, with the order holding it and what `p` may
    /// do to it now, if `p` may see it (the platform; the merchant owning its template; the
    /// user holding it).
    pub async fn coupon_history(&self, p: &Principal, id: CouponId) -> AppResult<HistoryView> {
        let coupon = self.store().coupon(id).await?;
        let visible = match p {
            Principal::Platform => true,
            Principal::User(u) => *u == coupon.user_id,
            Principal::Merchant(m) => {
                self.store().template(coupon.template_id).await?.merchant_id == Some(*m)
            }
            Principal::Service(_) => false,
        };
        if !visible {
            return Err(AppError::NotFound);
        }
        let events = self
            .store()
            .coupon_history(id)
            .await?
            .into_iter()
            .map(|e| HistoryEntry {
                from: e.from,
                to: e.to,
                order_id: e.order_id,
                actor: e.actor.to_text(),
                reason: e.reason,
                at: e.at,
            })
            .collect();
        let now = self.now();
        let held_by = match (&coupon.stored_status, &coupon.order_id, coupon.locked_until) {
            (CouponStatus::Locked, Some(order), Some(until)) => Some(HeldBy {
                order_id: order.as_str().to_owned(),
                until,
            }),
            _ => None,
        };
        Ok(HistoryView {
            coupon_id: id,
            template_id: coupon.template_id,
            user_id: coupon.user_id.clone(),
            status: coupon.status(now),
            held_by,
            actions: support_actions(p, &coupon, now),
            events,
        })
    }

    /// The query of template `id`'s coupons `filter` picks, a page at a time, if `p` may see
    /// the template; with the template.
    pub(crate) async fn holders_query(
        &self,
        p: &Principal,
        id: TemplateId,
        filter: HoldersFilter,
        page: PageRequest,
    ) -> AppResult<(Template, HoldersQuery)> {
        let t = self.visible_template(p, id).await?;
        let page = page.page(self.settings())?;
        let query = HoldersQuery {
            template: id,
            user: filter.user,
            status: filter.status,
            now: self.now(),
            after: page.after,
            limit: page.limit,
        };
        Ok((t, query))
    }

    /// A page of template `id`'s coupons `filter` picks, by coupon id.
    pub async fn holders(
        &self,
        p: &Principal,
        id: TemplateId,
        filter: HoldersFilter,
        page: PageRequest,
    ) -> AppResult<Holders> {
        let (template, query) = self.holders_query(p, id, filter, page).await?;
        let rows = self.holder_rows(&query).await?;
        let page = coupond_store::Page {
            after: query.after,
            limit: query.limit,
        };
        Ok(Holders {
            template,
            coupons: finish(rows, page, |c| c.id.get(), |c| c),
            at: query.now,
        })
    }

    /// The rows of one page of a holders query ([`App::holders_query`]), one more than the
    /// page to tell whether another follows.
    pub(crate) async fn holder_rows(&self, query: &HoldersQuery) -> AppResult<Vec<Coupon>> {
        Ok(self.store().template_coupons(query).await?)
    }
}
