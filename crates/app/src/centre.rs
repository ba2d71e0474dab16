//! The coupon centre: what a user may claim now, as the user sees it, and as the order
//! service's pages and the platform's support see it for them.

use coupond_domain::{ActivityId, Area, TemplateId, UserId};
use coupond_engine::centre::{self, Ask, Filter};

use crate::caller::{roles, Access};
use crate::context::App;
use crate::error::{AppError, AppResult};
use crate::pages::{finish, PageOf, PageRequest};
use crate::views::{OfferView, PublicActivityView};

/// Who may read a user's coupon centre for them: the platform and the order service.
pub const FOR_USER: Access = Access {
    roles: roles::PLATFORM_SERVICE,
    area: Area::Read,
};

impl App {
    /// A page of the templates on offer to `user` that `filter` picks, by template id, read
    /// from the shelf (cached; mended per template as they change).
    pub async fn claimable(
        &self,
        user: &UserId,
        filter: Filter,
        page: PageRequest,
    ) -> AppResult<PageOf<OfferView>> {
        let page = page.page(self.settings())?;
        // Cursors are template ids; `id:0` (never issued) starts at the first.
        let after = page.after.and_then(|a| TemplateId::new(a).ok());
        let ask = Ask {
            user,
            filter,
            after,
            limit: page.limit as usize,
        };
        let shelf = self.shelf().await?;
        let now = self.now();
        let offers = centre::claimable(self.store(), &shelf, self.claims(), &ask, now).await?;
        let id = |o: &centre::Offer| o.template.id.get();
        Ok(finish(offers, page, id, |o| OfferView::new(&o, now)))
    }

    /// Template `id` as `user` sees it: while it is on offer to them, or whatever its status
    /// once they hold one of its coupons; anything else is not found (a draft, one waiting
    /// for approval or not yet claimable, one whose audience leaves them out).
    pub async fn offer(&self, user: &UserId, id: TemplateId) -> AppResult<OfferView> {
        let t = self.claimed_template(id).await?;
        let now = self.now();
        let offer = centre::template_for(self.store(), self.claims(), user, t, now)
            .await?
            .ok_or(AppError::NotFound)?;
        Ok(OfferView::new(&offer, now))
    }

    /// Activity `id` while it runs, as users see it; before it runs, after it ends and once
    /// aborted, not found.
    pub async fn public_activity(&self, id: ActivityId) -> AppResult<PublicActivityView> {
        let (now, freeze) = (self.now(), self.settings().freeze);
        let a = centre::activity_for(self.store(), id, now, freeze)
            .await?
            .ok_or(AppError::NotFound)?;
        Ok(PublicActivityView::new(&a, now, freeze))
    }
}
