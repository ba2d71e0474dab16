//! Merchants' listings as a caller may see them, and the templates bound to them: a merchant
//! binds its own templates to its own listings, the platform its own templates to any
//! listing; a listing holds at most `max_bindings_per_listing`.

use coupond_domain::{Listing, ListingId, TemplateId};
use coupond_engine::{catalog, CampaignError};
use coupond_store::{Conflict, StoreError};

use crate::caller::{Access, Principal, CAMPAIGN_WORK};
use crate::context::App;
use crate::error::{AppError, AppResult};

/// Who may bind and unbind templates.
pub const BIND: Access = CAMPAIGN_WORK;

/// A template bound to a listing.
#[derive(Debug)]
pub struct Bound {
    /// Whether it was bound by this call (not already).
    pub created: bool,
    /// Every template now bound to the listing.
    pub bound: Vec<TemplateId>,
}

impl App {
    /// Listing `id`, if `p` may see it (merchants only their own).
    pub async fn visible_listing(&self, p: &Principal, id: ListingId) -> AppResult<Listing> {
        let l = self.store().listing(id).await?;
        match p.merchant() {
            Some(m) if l.merchant_id != m => Err(AppError::NotFound),
            _ => Ok(l),
        }
    }

    /// Binds `template` to `listing` (nothing changes if it already is).
    pub async fn bind(
        &self,
        p: &Principal,
        listing: ListingId,
        template: TemplateId,
    ) -> AppResult<Bound> {
        let (listing, template) = self.bindable(p, listing, template).await?;
        let max = self.settings().max_bindings_per_listing;
        let created = match catalog::bind(self.store(), &listing, &template, max, self.now()).await
        {
            Ok(created) => created,
            Err(CampaignError::Store(StoreError::Conflict(Conflict::Limit))) => {
                return Err(AppError::conflict(
                    "binding_limit",
                    format!("a listing holds at most {max} templates; unbind one first"),
                ))
            }
            Err(e) => return Err(e.into()),
        };
        let bound = self.store().listing_bindings(listing.id).await?;
        Ok(Bound { created, bound })
    }

    /// Unbinds `template` from `listing` (nothing changes if it is not bound).
    pub async fn unbind(
        &self,
        p: &Principal,
        listing: ListingId,
        template: TemplateId,
    ) -> AppResult<()> {
        let (listing, template) = self.bindable(p, listing, template).await?;
        catalog::unbind(self.store(), &listing, &template, self.now()).await?;
        Ok(())
    }

    /// The listing and template, if `p` may bind the one to the other; else not found.
    async fn bindable(
        &self,
        p: &Principal,
        listing: ListingId,
        template: TemplateId,
    ) -> AppResult<(Listing, coupond_domain::Template)> {
        let listing = self.visible_listing(p, listing).await?;
        let template = self.store().template(template).await?;
        if !listing.may_bind(template.merchant_id, p.merchant()) {
            return Err(AppError::NotFound);
        }
        Ok((listing, template))
    }
}
