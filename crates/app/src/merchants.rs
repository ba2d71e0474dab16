//! Merchants and the platform's cities: the platform registers, finds and edits merchants
//! (a merchant reads only itself) and names cities, which anyone may read.

use coupond_domain::Area;
use coupond_domain::{City, CityDraft, CityId, Merchant, MerchantDraft, MerchantId, MerchantPatch};
use coupond_engine::{campaigns, cities};
use coupond_store::MerchantQuery;

use crate::caller::{roles, Access, Principal};
use crate::context::App;
use crate::error::{AppError, AppResult};
use crate::pages::{finish, text_filter, PageOf, PageRequest};

/// Who may add and edit merchants and name cities: the platform's admins.
pub const MANAGE: Access = Access {
    roles: roles::PLATFORM,
    area: Area::Admin,
};

/// Who may list and find merchants: the platform.
pub const LIST: Access = Access {
    roles: roles::PLATFORM,
    area: Area::Read,
};

/// Who may read one merchant: the platform, and a merchant itself.
pub const READ: Access = Access {
    roles: roles::PLATFORM_MERCHANT,
    area: Area::Read,
};

/// Who may read the cities' names: anyone.
pub const CITIES: Access = Access {
    roles: roles::ANYONE,
    area: Area::Read,
};

/// The longest `name` filter, in characters.
pub const MAX_NAME_FILTER: usize = 200;

/// Which merchants to list.
#[derive(Clone, Debug, Default)]
pub struct MerchantFilter {
    /// Only merchants operating in this city.
    pub city: Option<CityId>,
    /// Only merchants whose name or short name contains this text (1 to
    /// [`MAX_NAME_FILTER`] characters, case ignored).
    pub name: Option<String>,
}

impl App {
    /// Adds a merchant.
    pub async fn create_merchant(&self, draft: &MerchantDraft) -> AppResult<Merchant> {
        draft.validate()?;
        Ok(campaigns::create_merchant(self.store(), draft, self.now()).await?)
    }

    /// Merchant `id`, if `p` may see it (a merchant only itself).
    pub async fn merchant(&self, p: &Principal, id: MerchantId) -> AppResult<Merchant> {
        if p.merchant().is_some_and(|own| own != id) {
            return Err(AppError::NotFound);
        }
        Ok(self.store().merchant(id).await?)
    }

    /// A page of the merchants `filter` picks, oldest first.
    pub async fn merchants(
        &self,
        filter: MerchantFilter,
        page: PageRequest,
    ) -> AppResult<PageOf<Merchant>> {
        let page = page.page(self.settings())?;
        let name = text_filter("name", filter.name, MAX_NAME_FILTER)?;
        let query = MerchantQuery {
            city: filter.city,
            name,
            page,
        };
        let rows = self.store().list_merchants(&query).await?;
        Ok(finish(rows, page, |m| m.id.get(), |m| m))
    }

    /// Changes merchant `id`'s fields `patch` gives; a concurrent edit is refused.
    pub async fn edit_merchant(&self, id: MerchantId, patch: MerchantPatch) -> AppResult<Merchant> {
        Ok(campaigns::edit_merchant(self.store(), id, patch, self.now()).await?)
    }

    /// Names (or renames) city `id`.
    pub async fn name_city(&self, id: CityId, draft: &CityDraft) -> AppResult<City> {
        Ok(cities::name(self.store(), id, draft, self.now()).await?)
    }

    /// A page of the named cities, by id.
    pub async fn cities(&self, page: PageRequest) -> AppResult<PageOf<City>> {
        let page = page.page(self.settings())?;
        let after = page.after.and_then(|a| CityId::new(a).ok());
        let rows = self.store().cities(after, page.limit).await?;
        Ok(finish(rows, page, |c| c.id.get(), |c| c))
    }
}
