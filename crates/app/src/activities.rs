//! The platform's activities: the platform creates, edits (until frozen) and aborts them;
//! merchants see those covering their cities, by default the ones enrolling now. Each view
//! carries what the caller may do with it now, so no front door works that out again.

use coupond_domain::{
    Activity, ActivityDraft, ActivityId, ActivityPatch, ActivitySpec, ActivityStatus, Area, CityId,
    Timestamp,
};
use coupond_engine::campaigns;
use coupond_store::ActivityQuery;

use crate::caller::{may_act, roles, Access, Principal, CAMPAIGN_READ};
use crate::context::App;
use crate::error::AppResult;
use crate::pages::{finish, Narrowing, PageOf, PageRequest};
use crate::views::ActivityView;

/// Who may create, edit and abort activities: the platform's campaign work.
pub const EDIT: Access = Access {
    roles: roles::PLATFORM,
    area: Area::Campaigns,
};

/// Who may read activities: the platform, and merchants those of their cities.
pub const READ: Access = CAMPAIGN_READ;

/// Which activities to list.
#[derive(Clone, Debug, Default)]
pub struct ActivityFilter {
    /// Only those in this status now (a merchant's list defaults to `enrolling`).
    pub status: Option<ActivityStatus>,
    /// Only those covering this city.
    pub city: Option<CityId>,
    /// Kind (of their templates), pause and reference.
    pub narrowing: Narrowing,
}

impl App {
    /// Activity `a` as `p` sees it at `now` (the one instant a call reads the clock at), with
    /// the actions `p` may take on it: what its rules allow ([`Activity::actions`]) on the
    /// caller's side (the platform edits and aborts, a merchant enrolls), if its role runs
    /// campaigns.
    pub fn activity_view(&self, p: &Principal, a: Activity, now: Timestamp) -> ActivityView {
        let freeze = self.settings().freeze;
        let side = match p {
            Principal::Platform => Some(true),
            Principal::Merchant(_) => Some(false),
            _ => None,
        };
        let actions = match side {
            Some(platform) if may_act(Area::Campaigns) => a
                .actions(now, freeze)
                .into_iter()
                .filter(|action| action.is_platforms() == platform)
                .collect(),
            _ => Vec::new(),
        };
        let mut v = ActivityView::new(a, now, freeze);
        v.actions = Some(actions);
        v
    }

    /// Creates an activity.
    pub async fn create_activity(&self, draft: ActivityDraft) -> AppResult<ActivityView> {
        let spec = ActivitySpec::try_from(draft)?;
        let now = self.now();
        let a = campaigns::create_activity(self.store(), &spec, now).await?;
        Ok(self.activity_view(&Principal::Platform, a, now))
    }

    /// Activity `id` as `p` may see it.
    pub async fn activity(&self, p: &Principal, id: ActivityId) -> AppResult<ActivityView> {
        let a = self.visible_activity(p, id).await?;
        Ok(self.activity_view(p, a, self.now()))
    }

    /// A page of the activities `filter` picks, oldest first; a merchant's are those of its
    /// cities.
    pub async fn activities(
        &self,
        p: &Principal,
        filter: ActivityFilter,
        page: PageRequest,
    ) -> AppResult<PageOf<ActivityView>> {
        let page = page.page(self.settings())?;
        let now = self.now();
        let (status, any_city) = match p.merchant() {
            Some(m) => {
                let merchant = self.store().merchant(m).await?;
                let status = filter.status.unwrap_or(ActivityStatus::Enrolling);
                (Some(status), Some(merchant.cities))
            }
            None => (filter.status, None),
        };
        let freeze = self.settings().freeze;
        let query = ActivityQuery {
            narrow: filter.narrowing.checked()?,
            status,
            city: filter.city,
            any_city,
            now,
            freeze,
            page,
        };
        let rows = self.store().list_activities(&query).await?;
        let view = |a| ActivityView::new(a, now, freeze);
        Ok(finish(rows, page, |a| a.id.get(), view))
    }

    /// Changes activity `id` while it is scheduled or enrolling.
    pub async fn edit_activity(
        &self,
        id: ActivityId,
        patch: ActivityPatch,
    ) -> AppResult<ActivityView> {
        let now = self.now();
        let freeze = self.settings().freeze;
        let updated = campaigns::edit_activity(self.store(), id, patch, now, freeze).await?;
        // Its templates' claim windows may follow its run: every instance reads them again.
        self.forget_activity_templates(id).await?;
        Ok(self.activity_view(&Principal::Platform, updated, now))
    }

    /// Aborts activity `id` and every template in it. Final.
    pub async fn abort_activity(&self, id: ActivityId) -> AppResult<ActivityView> {
        let now = self.now();
        let freeze = self.settings().freeze;
        let aborted = campaigns::abort_activity(self.store(), id, now, freeze).await?;
        // Its templates ended with it: no instance keeps offering them from memory.
        self.forget_activity_templates(id).await?;
        Ok(self.activity_view(&Principal::Platform, aborted, now))
    }
}
