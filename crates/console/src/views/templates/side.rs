//! The side of a template's page: its stats over the chosen window, bulk issuance jobs, holders,
//! code batches, change history and campaign messages, each read as the session's caller (what
//! it may not read is left empty).

use coupond_api::routes::campaign_messages::CampaignMessageView;
use coupond_api::routes::issuances::IssuanceView;
use coupond_api::routes::templates::TemplateChangeView;
use coupond_api::views::{CodeBatchView, CouponView};
use coupond_app::coupons::{Holders, HoldersFilter};
use coupond_app::identify::Origin;
use coupond_app::pages::PageRequest;
use coupond_app::records::{CampaignMessage, CodeBatch, Issuance, Page};
use coupond_app::reports::{StatsQuery, TemplateStats};
use coupond_app::{codes, coupons, issuance, messages, reports, templates};
use coupond_domain::TemplateId;

use super::{campaign, range, Unit};
use crate::session::Session;
use crate::Console;

/// What the side of a template's page lists.
#[derive(Default)]
pub(super) struct Side {
    pub(super) stats: Option<TemplateStats>,
    /// Its history's first page.
    pub(super) history: Vec<TemplateChangeView>,
    pub(super) jobs: Vec<IssuanceView>,
    pub(super) holders: Vec<CouponView>,
    pub(super) batches: Vec<CodeBatchView>,
    pub(super) messages: Vec<campaign::Sent>,
}

impl Side {
    pub(super) async fn read(console: &Console, session: &Session, id: i64, hours: u32) -> Side {
        let Ok(t) = TemplateId::new(id) else {
            return Side::default();
        };
        let (app, p) = (console.app(), &session.principal);
        let history = app.template_history(p, t, PageRequest::first(50));
        let history = session.act(app, templates::READ, history).await;
        let window = match range(hours).1 {
            Unit::Hour => StatsQuery {
                hours: Some(hours),
                days: None,
            },
            Unit::Day => StatsQuery {
                hours: None,
                days: Some(hours / 24),
            },
        };
        let stats = app.template_stats(p, t, &window);
        let stats = session.act(app, reports::FIGURES, stats).await.ok();
        let first = PageRequest::first(20);
        let holders = app.holders(p, t, HoldersFilter::default(), first);
        let holders = session.act(app, coupons::HOLDERS, holders).await;
        let now = app.now();
        let (jobs, batches, messages) = Self::own(console, session, t).await;
        Side {
            messages: messages
                .into_iter()
                .map(CampaignMessageView::new)
                .map(|m| campaign::Sent::of(&m))
                .collect(),
            stats,
            history: history.map(|p| p.items).unwrap_or_default(),
            jobs: jobs
                .into_iter()
                .map(|j| IssuanceView::new(j, now))
                .collect(),
            holders: holders.map(Self::holders).unwrap_or_default(),
            batches: batches.into_iter().map(CodeBatchView::new).collect(),
        }
    }

    /// The holders read, as views of their coupons.
    fn holders(h: Holders) -> Vec<CouponView> {
        let (t, at) = (&h.template, h.at);
        let view = |c| CouponView::new(c, t, at);
        h.coupons.items.into_iter().map(view).collect()
    }

    /// The template's issuance jobs (up to 200), code batches (20) and campaign messages
    /// (10), as the application answers the session's caller (none where it refuses).
    async fn own(
        console: &Console,
        session: &Session,
        t: TemplateId,
    ) -> (Vec<Issuance>, Vec<CodeBatch>, Vec<CampaignMessage>) {
        let (app, p) = (console.app(), &session.principal);
        let who = || session.identity.clone();
        let first = |limit| Page { after: None, limit };
        let jobs = app.issuances(p, t, first(200));
        let jobs = app.acting(who(), issuance::READ, Origin::default(), jobs);
        let batches = app.code_batches(p, t, first(20));
        let batches = app.acting(who(), codes::READ, Origin::default(), batches);
        let sent = app.sent_messages(p, t, first(10));
        let sent = app.acting(who(), messages::READ, Origin::default(), sent);
        (
            jobs.await.unwrap_or_default(),
            batches.await.unwrap_or_default(),
            sent.await.unwrap_or_default(),
        )
    }
}
