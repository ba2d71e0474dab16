//! Bulk issuance as a caller may start it: coupons of a template the caller may see, while
//! it is issuing, to a list of users (read by the front door) or to a segment of users by
//! their tags (a merchant's segment counts only the tags the platform shares with it). Small
//! JSON lists are issued before the answer; uploads and segments in the background.

use coupond_domain::{Segment, Template, TemplateId, UserId};
use coupond_engine::{issuance, user_tags};
use coupond_store::{InvalidLine, Issuance, IssuanceKey, NewIssuance, Page};

use crate::caller::{Access, Principal, CAMPAIGN_READ, CAMPAIGN_WORK};
use crate::context::App;
use crate::error::{AppError, AppResult};
use crate::retry::RetryKey;

/// Who may read issuance jobs.
pub const READ: Access = CAMPAIGN_READ;

/// Who may start one: the platform and merchants (on their own templates).
pub const START: Access = CAMPAIGN_WORK;

/// Users one job may name, at most (lines of an upload, members of a segment).
pub const MAX_USERS: usize = 1_000_000;

/// The users a job issues to, as the front door read them.
#[derive(Debug, Default)]
pub struct Recipients {
    /// Valid and distinct, in the order given.
    pub users: Vec<UserId>,
    pub duplicates: u64,
    pub invalid: u64,
    /// The first 100 invalid lines.
    pub invalid_lines: Vec<InvalidLine>,
}

/// A job asked for.
#[derive(Debug)]
pub struct IssuanceRequest {
    pub template: Template,
    pub recipients: Recipients,
    /// Issued in the background (uploads, segments) rather than before the answer.
    pub background: bool,
    pub retry: Option<RetryKey>,
    /// What the request asked, canonically (its retry key's fingerprint).
    pub asked: String,
}

/// The scope of retry keys kept with the job (the route's name, for keys kept before this
/// layer existed).
const ISSUANCE_SCOPE: &str = "POST /v1/templates/{id}/issuances";

impl App {
    /// Template `id`, if `p` may see it and it may be issued now.
    pub async fn issuable_template(&self, p: &Principal, id: TemplateId) -> AppResult<Template> {
        let t = self.visible_template(p, id).await?;
        t.check_issuing(self.now())?;
        Ok(t)
    }

    /// The users of a segment, as a job's list: at most [`MAX_USERS`]. With
    /// `active_within_days`, only users seen since that many days ago.
    pub async fn segment_users(&self, p: &Principal, seg: &Segment) -> AppResult<Recipients> {
        let by_merchant = p.merchant().is_some();
        let any = user_tags::segment_tags(self.store(), by_merchant, &seg.any).await?;
        let limit = MAX_USERS as u32 + 1;
        let users = match seg.seen_since(self.now()) {
            Some(since) => {
                self.store()
                    .active_segment_users(&any, since, limit)
                    .await?
            }
            None => self.store().segment_users(&any, limit).await?,
        };
        if users.len() > MAX_USERS {
            return Err(AppError::invalid(
                "segment_too_large",
                "segment.any",
                format!("the segment holds more than {MAX_USERS} users; split it by tag"),
            ));
        }
        Ok(Recipients {
            users,
            ..Recipients::default()
        })
    }

    /// Starts a job (or, for a retry with the same key, finds the one started before: the
    /// `bool` says so) and, unless it runs in the background, works it to its end.
    pub async fn start_issuance(
        &self,
        p: &Principal,
        req: IssuanceRequest,
    ) -> AppResult<(Issuance, bool)> {
        let key = req.retry.map(|k| k.scoped(ISSUANCE_SCOPE, &req.asked));
        let r = &req.recipients;
        let new = NewIssuance {
            template: req.template.id,
            actor: &p.actor(),
            users: &r.users,
            duplicates: r.duplicates,
            invalid: r.invalid,
            invalid_lines: &r.invalid_lines,
            key: key.as_ref().map(IssuanceKey::from),
        };
        let max = self.settings().max_queued_issuance_per_owner;
        let (job, created) =
            issuance::start_job(self.store(), &req.template, &new, max, self.now()).await?;
        if req.background {
            self.issuance_worker().wake();
            return Ok((job, !created));
        }
        let done = match self.issuance_worker().finish(job.id).await? {
            Some(done) => done,
            // Another instance holds it: as far as it got.
            None => self.store().issuance(job.id).await?,
        };
        Ok((done, !created))
    }

    /// A page of template `id`'s issuance jobs.
    pub async fn issuances(
        &self,
        p: &Principal,
        id: TemplateId,
        page: Page,
    ) -> AppResult<Vec<Issuance>> {
        self.visible_template(p, id).await?;
        Ok(self.store().template_issuances(id, page).await?)
    }

    /// Issuance job `id` and its progress, if `p` may see its template.
    pub async fn issuance(&self, p: &Principal, id: i64) -> AppResult<Issuance> {
        let job = self.store().issuance(id).await?;
        self.visible_template(p, job.template_id).await?;
        Ok(job)
    }
}
