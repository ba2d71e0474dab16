//! Merchants' listings as a caller may see them, each with the coupons live on it, and the
//! templates bound to them: a merchant keeps its own listings and binds its own templates to
//! them, the platform its own templates to any listing; a listing holds at most
//! `max_bindings_per_listing`. Anyone searches listings (a merchant its own).

use std::collections::BTreeMap;

use coupond_domain::{
    ActivityId, Area, CategoryId, CityId, CouponKind, Listing, ListingDraft, ListingId,
    ListingPatch, TemplateId, Timestamp,
};
use coupond_engine::{catalog, CampaignError};
use coupond_store::{Conflict, ListingQuery, StoreError};

use crate::caller::{roles, Access, Principal, CAMPAIGN_WORK};
use crate::context::App;
use crate::error::{AppError, AppResult};
use crate::pages::{finish, text_filter, PageOf, PageRequest};
use crate::views::{ListingView, LiveCoupon};

/// Who may bind and unbind templates.
pub const BIND: Access = CAMPAIGN_WORK;

/// Who may add, change and delete listings: merchants, their own.
pub const EDIT: Access = Access {
    roles: roles::MERCHANT,
    area: Area::Campaigns,
};

/// Who may read and search listings: anyone (a merchant sees its own).
pub const READ: Access = Access {
    roles: roles::ANYONE,
    area: Area::Read,
};

/// The longest `external_id` filter, in characters.
const MAX_EXTERNAL_ID: usize = 100;

/// Which listings to find. Coupon filters look at the coupons claimable now.
#[derive(Clone, Debug, Default)]
pub struct ListingFilter {
    /// The listing with this `external_id` (1 to 100 characters).
    pub external_id: Option<String>,
    pub city: Option<CityId>,
    pub category: Option<CategoryId>,
    /// With a live coupon of this kind.
    pub kind: Option<CouponKind>,
    /// With a live coupon from this activity.
    pub activity: Option<ActivityId>,
    /// With this template live on it.
    pub template: Option<TemplateId>,
    /// With a live coupon from an activity of this type (its `reference.type`).
    pub activity_type: Option<String>,
    /// Only listings with a live coupon (`true`) or only those without (`false`).
    pub has_coupon: Option<bool>,
}

/// A template bound to a listing.
#[derive(Debug)]
pub struct Bound {
    /// Whether it was bound by this call (not already).
    pub created: bool,
    /// Every template now bound to the listing.
    pub bound: Vec<TemplateId>,
}

impl App {
    /// Adds a listing of `p`, a merchant, in one of its cities.
    pub async fn create_listing(
        &self,
        p: &Principal,
        draft: &ListingDraft,
    ) -> AppResult<ListingView> {
        let merchant = p.merchant().ok_or(AppError::Forbidden)?;
        let merchant = self.store().merchant(merchant).await?;
        let l = match catalog::create_listing(self.store(), &merchant, draft, self.now()).await {
            Err(CampaignError::Store(e)) => return Err(external_id_taken(e)),
            done => done?,
        };
        Ok(ListingView::new(l, Vec::new()))
    }

    /// Listing `id` with the coupons claimable on it now, if `p` may see it.
    pub async fn listing(&self, p: &Principal, id: ListingId) -> AppResult<ListingView> {
        let l = self.visible_listing(p, id).await?;
        let mut views = self.with_coupons(vec![l], self.now()).await?;
        views.pop().ok_or(AppError::NotFound)
    }

    /// Changes listing `id`'s fields `patch` gives.
    pub async fn update_listing(
        &self,
        p: &Principal,
        id: ListingId,
        patch: ListingPatch,
    ) -> AppResult<ListingView> {
        let l = self.visible_listing(p, id).await?;
        let merchant = self.store().merchant(l.merchant_id).await?;
        let draft = patch.apply(&l.draft, &merchant)?;
        let now = self.now();
        let updated = catalog::update_listing(self.store(), &l, &draft, now).await;
        let updated = updated.map_err(external_id_taken)?;
        let mut views = self.with_coupons(vec![updated], now).await?;
        views.pop().ok_or(AppError::NotFound)
    }

    /// Deletes listing `id`.
    pub async fn delete_listing(&self, p: &Principal, id: ListingId) -> AppResult<()> {
        let listing = self.visible_listing(p, id).await?;
        Ok(catalog::delete_listing(self.store(), &listing, self.now()).await?)
    }

    /// A page of the listings `filter` finds (a merchant's own), each with its live coupons.
    pub async fn listings(
        &self,
        p: &Principal,
        filter: ListingFilter,
        page: PageRequest,
    ) -> AppResult<PageOf<ListingView>> {
        let page = page.page(self.settings())?;
        let external_id = text_filter("external_id", filter.external_id, MAX_EXTERNAL_ID)?;
        let max = coupond_domain::Reference::MAX_CHARS;
        let activity_type = text_filter("activity_type", filter.activity_type, max)?;
        let now = self.now();
        let query = ListingQuery {
            merchant: p.merchant(),
            external_id,
            city: filter.city,
            category: filter.category,
            kind: filter.kind,
            activity: filter.activity,
            activity_type,
            template: filter.template,
            has_coupon: filter.has_coupon,
            now,
            page,
        };
        let rows = self.store().list_listings(&query).await?;
        let trimmed = finish(rows, page, |l| l.id.get(), |l| l);
        Ok(PageOf {
            items: self.with_coupons(trimmed.items, now).await?,
            next_cursor: trimmed.next_cursor,
        })
    }

    /// The listings with the coupons live on them at `now`.
    async fn with_coupons(
        &self,
        listings: Vec<Listing>,
        now: Timestamp,
    ) -> AppResult<Vec<ListingView>> {
        let ids: Vec<ListingId> = listings.iter().map(|l| l.id).collect();
        let mut live: BTreeMap<ListingId, Vec<LiveCoupon>> = BTreeMap::new();
        for (listing, t) in self.store().live_templates(&ids, now).await? {
            live.entry(listing).or_default().push(LiveCoupon::new(&t));
        }
        let view = |l: Listing| {
            let coupons = live.remove(&l.id).unwrap_or_default();
            ListingView::new(l, coupons)
        };
        Ok(listings.into_iter().map(view).collect())
    }

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

/// A listing's `external_id` another of the merchant's listings has.
fn external_id_taken(e: StoreError) -> AppError {
    match e {
        StoreError::Conflict(Conflict::Unique) => AppError::conflict(
            "external_id_taken",
            "another of your listings already has this external_id",
        ),
        e => e.into(),
    }
}
