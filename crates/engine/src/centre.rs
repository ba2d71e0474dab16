//! The coupon centre: the templates a user may claim now, and the public views of one template
//! and one activity, for the user's own routes, the service's routes on a user's behalf and
//! the console's preview.
//!
//! The list is cut from a [`Shelf`]: every published template whose claim window has not
//! ended, with its activity's title, read in one go. The API keeps the shelf as long as the
//! claim path keeps a template (`cache_ttl`) and drops it on the same notices (a template
//! published, changed, aborted or sold out), so a list of a thousand templates costs no
//! database read but the user's own: its tags (only when a tag audience is in the way) and how
//! many it holds of the page's templates. Whether a template is on offer, and to whom, is the
//! domain's [`on_offer`] and [`centre::admits`]; stock left comes from the template as read and
//! from the claim engine's memory of what sold out.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use coupond_domain::centre::{self, Chances};
use coupond_domain::{
    on_offer, Activity, ActivityId, CityId, CouponKind, ListingId, Tag, Template, TemplateId,
    TemplateStatus, Timestamp, UserId,
};
use coupond_store::{Page, Store, StoreError, StoreResult, TemplateQuery};

use crate::claims::ClaimEngine;

/// Templates read per query while loading a shelf.
const LOAD_PAGE: u32 = 1_000;

/// Every published template whose claim window has not ended (scheduled or active when read),
/// ascending by id, with the titles of their activities.
#[derive(Debug, Default)]
pub struct Shelf {
    templates: Vec<Arc<Template>>,
    activity_titles: HashMap<ActivityId, String>,
}

impl Shelf {
    /// Reads the shelf at `now`: the active and the scheduled templates, then their
    /// activities' titles.
    pub async fn load(store: &dyn Store, now: Timestamp) -> StoreResult<Shelf> {
        let mut templates = Vec::new();
        for status in [TemplateStatus::Active, TemplateStatus::Scheduled] {
            let mut after = None;
            loop {
                let q = TemplateQuery {
                    merchant: None,
                    activity: None,
                    status: Some(status),
                    city: None,
                    narrow: Default::default(),
                    now,
                    page: Page {
                        after,
                        limit: LOAD_PAGE,
                    },
                };
                let page = store.list_templates(&q).await?;
                after = page.last().map(|t| t.id.get());
                let full = page.len() == LOAD_PAGE as usize;
                templates.extend(page.into_iter().filter(Template::is_public).map(Arc::new));
                if !full {
                    break;
                }
            }
        }
        templates.sort_by_key(|t| t.id);
        let mut activity_titles = HashMap::new();
        for id in templates.iter().filter_map(|t| t.spec.activity_id) {
            if let std::collections::hash_map::Entry::Vacant(slot) = activity_titles.entry(id) {
                slot.insert(store.activity(id).await?.spec.title.clone());
            }
        }
        Ok(Shelf {
            templates,
            activity_titles,
        })
    }

    /// This shelf with templates `ids` read again, in one read: each is taken out and, if it
    /// still belongs on a shelf at `now` (public, scheduled or active), put back in its place
    /// by id, with its activity's title read if the shelf had none. A template changing state
    /// (paused, resumed, edited, sold out) costs this, not a reload of every template.
    pub async fn with_fresh(
        &self,
        store: &dyn Store,
        ids: &[TemplateId],
        now: Timestamp,
    ) -> StoreResult<Shelf> {
        let fresh = store.templates_by_ids(ids).await?;
        let mut templates: Vec<Arc<Template>> = self
            .templates
            .iter()
            .filter(|t| !ids.contains(&t.id))
            .cloned()
            .collect();
        let mut activity_titles = self.activity_titles.clone();
        for t in fresh {
            let shelved = matches!(
                t.status(now),
                TemplateStatus::Active | TemplateStatus::Scheduled
            );
            if !(t.is_public() && shelved) {
                continue;
            }
            if let Some(a) = t.spec.activity_id {
                if let std::collections::hash_map::Entry::Vacant(slot) = activity_titles.entry(a) {
                    slot.insert(store.activity(a).await?.spec.title.clone());
                }
            }
            let at = templates.partition_point(|s| s.id < t.id);
            templates.insert(at, Arc::new(t));
        }
        Ok(Shelf {
            templates,
            activity_titles,
        })
    }

    /// How many templates it holds.
    pub fn len(&self) -> usize {
        self.templates.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.templates.is_empty()
    }

    /// The largest share of its budget any active template on offer has given or holds
    /// for open orders (1.0: spent); `None` when none has a budget.
    pub fn budget_used_max(&self, now: Timestamp) -> Option<f64> {
        self.templates
            .iter()
            .filter(|t| t.status(now) == TemplateStatus::Active)
            .filter_map(|t| {
                let budget = t.spec.budget?.minor();
                let used = t.given.minor().saturating_add(t.reserved.minor());
                (budget > 0).then(|| used as f64 / budget as f64)
            })
            .reduce(f64::max)
    }
}

/// Which of the templates on offer a caller asks for (every one left out: all of them).
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Usable in this city.
    pub city: Option<CityId>,
    /// Bound to this listing.
    pub listing: Option<ListingId>,
    /// In this activity.
    pub activity: Option<ActivityId>,
    /// Of this kind.
    pub kind: Option<CouponKind>,
}

impl Filter {
    fn takes(&self, t: &Template, bound: Option<&HashSet<TemplateId>>) -> bool {
        self.city.is_none_or(|c| t.spec.cities.contains(c))
            && self.activity.is_none_or(|a| t.spec.activity_id == Some(a))
            && self.kind.is_none_or(|k| t.spec.value.kind() == k)
            && bound.is_none_or(|b| b.contains(&t.id))
    }
}

/// One template as the centre shows it to one user.
#[derive(Clone, Debug)]
pub struct Offer {
    pub template: Arc<Template>,
    /// Its activity's title, if it is in one.
    pub activity_title: Option<String>,
    pub chances: Chances,
}

/// The user's tags, read once and only if a tag audience asks.
struct Tags<'a> {
    store: &'a dyn Store,
    user: &'a UserId,
    read: Option<Vec<Tag>>,
}

impl Tags<'_> {
    async fn admit(&mut self, t: &Template) -> StoreResult<bool> {
        let audience = &t.spec.audience;
        if let Some(known) = audience.admits(self.user) {
            return Ok(known);
        }
        if self.read.is_none() {
            self.read = Some(self.store.user_tags(self.user).await?);
        }
        let tags = self.read.as_deref().unwrap_or_default();
        Ok(centre::admits(audience, self.user, tags))
    }
}

/// A page of the centre as one user asks for it.
#[derive(Clone, Debug)]
pub struct Ask<'a> {
    pub user: &'a UserId,
    pub filter: Filter,
    /// The last template of the previous page.
    pub after: Option<TemplateId>,
    /// How many templates at most: one more than a page, to know whether another follows.
    pub limit: usize,
}

/// Up to `ask.limit` templates on offer to `ask.user` at `now` that its filter takes, after
/// `ask.after`, ascending by id.
pub async fn claimable(
    store: &dyn Store,
    shelf: &Shelf,
    claims: &ClaimEngine,
    ask: &Ask<'_>,
    now: Timestamp,
) -> StoreResult<Vec<Offer>> {
    let bound = match ask.filter.listing {
        Some(l) => Some(store.listing_bindings(l).await?.into_iter().collect()),
        None => None,
    };
    let start = ask
        .after
        .map_or(0, |a| shelf.templates.partition_point(|t| t.id <= a));
    let mut tags = Tags {
        store,
        user: ask.user,
        read: None,
    };
    let mut page = Vec::new();
    for t in &shelf.templates[start..] {
        if page.len() == ask.limit {
            break;
        }
        if on_offer(t, now) && ask.filter.takes(t, bound.as_ref()) && tags.admit(t).await? {
            page.push(t.clone());
        }
    }
    offers(store, claims, ask.user, page, &shelf.activity_titles, now).await
}

/// Template `t` as `user` may look at it, or `None`: a user sees a template while it is on
/// offer to it (published, in its claim window, not paused, its audience taking the user in)
/// or once it holds one of its coupons, whatever the template's status then. A template in an
/// activity still enrolling, a scheduled one, a draft, and one whose audience leaves the user
/// out read as absent: titles, dates and values are not told before they are announced.
pub async fn template_for(
    store: &dyn Store,
    claims: &ClaimEngine,
    user: &UserId,
    t: Arc<Template>,
    now: Timestamp,
) -> StoreResult<Option<Offer>> {
    if !t.is_public() {
        return Ok(None);
    }
    let mut titles = HashMap::new();
    if let Some(a) = t.spec.activity_id {
        titles.insert(a, store.activity(a).await?.spec.title.clone());
    }
    let Some(offer) = offers(store, claims, user, vec![t], &titles, now)
        .await?
        .pop()
    else {
        return Ok(None);
    };
    if offer.chances.held > 0 {
        return Ok(Some(offer));
    }
    let mut tags = Tags {
        store,
        user,
        read: None,
    };
    let shown = on_offer(&offer.template, now) && tags.admit(&offer.template).await?;
    Ok(shown.then_some(offer))
}

/// Activity `id` if users may look at it at `now` (it is running), else `None`.
pub async fn activity_for(
    store: &dyn Store,
    id: ActivityId,
    now: Timestamp,
    freeze: time::Duration,
) -> StoreResult<Option<Activity>> {
    match store.activity(id).await {
        Ok(a) => Ok(centre::shows_activity(&a, now, freeze).then_some(a)),
        Err(StoreError::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

/// `templates` with what `user` holds of each (one read) and their stock as the claim path
/// knows it.
async fn offers(
    store: &dyn Store,
    claims: &ClaimEngine,
    user: &UserId,
    templates: Vec<Arc<Template>>,
    titles: &HashMap<ActivityId, String>,
    now: Timestamp,
) -> StoreResult<Vec<Offer>> {
    let ids: Vec<TemplateId> = templates.iter().map(|t| t.id).collect();
    let held: HashMap<TemplateId, u32> = store.held(user, &ids).await?.into_iter().collect();
    Ok(templates
        .into_iter()
        .map(|t| {
            let held = held.get(&t.id).copied().unwrap_or(0);
            let chances = Chances::of(&t, held, claims.is_sold_out(t.id), now);
            let activity_title = t.spec.activity_id.and_then(|a| titles.get(&a).cloned());
            Offer {
                template: t,
                activity_title,
                chances,
            }
        })
        .collect())
}
