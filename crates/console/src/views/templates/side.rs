//! The side of a template's page: its stats over the chosen window, bulk issuance jobs, holders,
//! code batches, change history and campaign messages, each read as the session's caller (what
//! it may not read is left empty).

use coupond_api::pagination::PageOf;
use coupond_api::routes::campaign_messages::CampaignMessageView;
use coupond_api::routes::issuances::IssuanceView;
use coupond_api::routes::reports::TemplateStats;
use coupond_api::routes::templates::TemplateChangeView;
use coupond_api::views::{CodeBatchView, CouponView};
use coupond_app::identify::Origin;
use coupond_app::{codes, issuance, messages};
use coupond_domain::TemplateId;
use coupond_store::{CampaignMessage, CodeBatch, Issuance, Page};

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
        let (api, who) = (console.api(), &session.caller);
        let window = match range(hours).1 {
            Unit::Hour => format!("hours={hours}"),
            Unit::Day => format!("days={}", hours / 24),
        };
        let paths = [
            format!("/v1/templates/{id}/stats?{window}"),
            format!("/v1/templates/{id}/coupons?limit=20"),
            format!("/v1/templates/{id}/history?limit=50"),
        ];
        let stats = api.get(who, &paths[0]).await;
        let holders = api.get(who, &paths[1]).await;
        let history = api.get(who, &paths[2]).await;
        let now = console.app().now();
        let (jobs, batches, messages) = match TemplateId::new(id) {
            Ok(t) => Self::own(console, session, t).await,
            Err(_) => Default::default(),
        };
        Side {
            messages: messages
                .into_iter()
                .map(CampaignMessageView::new)
                .map(|m| campaign::Sent::of(&m))
                .collect(),
            stats: stats.into::<TemplateStats>().ok(),
            history: history
                .into::<PageOf<_>>()
                .map(|p| p.items)
                .unwrap_or_default(),
            jobs: jobs
                .into_iter()
                .map(|j| IssuanceView::new(j, now))
                .collect(),
            holders: holders
                .into::<PageOf<_>>()
                .map(|p| p.items)
                .unwrap_or_default(),
            batches: batches.into_iter().map(CodeBatchView::new).collect(),
        }
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
