//! Templates: the list (the platform's across merchants, a merchant's own), a template's page
//! (summary, its terms and their change history (`facts`), edit, publish and abort, claims and
//! uses per hour or day as a chart, bulk issuance by file upload with live progress). The
//! create and edit form is `enroll` and `template_form`.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use coupond_api::routes::issuances::IssuanceView;
use coupond_api::routes::reports::TemplateStats;
use coupond_api::views::{CodeBatchStatus, ReviewView, TemplateView};
use coupond_app::coupons::HoldersFilter;
use coupond_app::pages::PageRequest;
use coupond_app::template_reads::TemplateFilter;
use coupond_app::{templates, AppError};
use coupond_domain::{MerchantId, TemplateAction, TemplateId, TemplateStatus, Timestamp, Validity};
use serde::Deserialize;

use super::choices::{self, Choice};
use super::format::{money, sort_templates, span, SortKey};
use super::names::{activity_title, CityNames, MerchantNames};
use super::paging::{gather_all, max_rows_words, Gathered, Pager};
use super::{download, problem_page, render, Shell, TemplateRow};
use crate::problem::Problem;
use crate::session::Session;
use crate::Console;

mod campaign;
mod changes;
mod chart;
mod facts;
mod side;
mod upload;

pub use campaign::send as send_message;
pub use changes::{
    abort, approve, code_batch, codes_csv, delete, extend, pause, publish, reject, resume, stop,
    top_up,
};
pub use upload::{progress, upload};

pub(super) use chart::{Chart, Slot, Unit};
use side::Side;

#[derive(Debug, Default, Deserialize)]
pub struct Filter {
    #[serde(default)]
    status: String,
    /// The platform's filter: one merchant's templates.
    #[serde(default)]
    merchant_id: String,
    /// A column of [`SortKey::ALL`], and `desc` to reverse it.
    #[serde(default)]
    sort: String,
    #[serde(default)]
    desc: String,
    /// Which page of [`PER_PAGE`](super::paging::PER_PAGE) rows, from 1.
    #[serde(default)]
    page: String,
}

/// A sortable column's header: its label, its link, and the arrow showing the current sort
/// (every other column shows that it sorts, too).
#[derive(Debug, Clone)]
pub struct Column {
    pub label: &'static str,
    pub href: String,
    pub arrow: &'static str,
    /// `ascending` or `descending` on the column the table is sorted by, else empty.
    pub sorted: &'static str,
    pub num: bool,
}

#[derive(Template)]
#[template(path = "templates.html")]
struct ListPage {
    shell: Shell,
    platform: bool,
    status: String,
    statuses: Vec<&'static str>,
    merchant_id: String,
    /// The platform's merchants to filter by, when few enough for a select.
    merchants: Option<Vec<Choice>>,
    /// The merchant filtered by, in words.
    merchant_name: String,
    columns: Vec<Column>,
    rows: Vec<TemplateRow>,
    pager: Pager,
    /// Set when the list was cut at [`MAX_ROWS`](super::paging::MAX_ROWS): what the page
    /// says about it.
    cut: Option<String>,
}

/// Every template matching the filter (up to [`MAX_ROWS`](super::paging::MAX_ROWS)), sorted
/// as a whole, a page of [`PER_PAGE`](super::paging::PER_PAGE) at a time.
pub async fn list(
    State(console): State<Console>,
    session: Session,
    Query(f): Query<Filter>,
) -> Response {
    let statuses: Vec<&'static str> = TemplateStatus::ALL.iter().map(|s| s.as_str()).collect();
    let status = statuses
        .iter()
        .find(|s| **s == f.status)
        .copied()
        .unwrap_or("");
    let merchant_id = match f.merchant_id.trim() {
        "" => String::new(),
        m if session.is_platform() && m.parse::<u32>().is_ok() => m.to_owned(),
        _ => String::new(),
    };
    let filter = TemplateFilter {
        status: TemplateStatus::parse(status),
        merchant: merchant_id
            .parse()
            .ok()
            .and_then(|m| MerchantId::new(m).ok()),
        ..TemplateFilter::default()
    };
    let (templates, cut) = match gather_templates(&console, &session, filter).await {
        Ok(g) => (g.items, g.cut),
        Err(p) => return problem_page(&session, &p),
    };
    let names = MerchantNames::load(&console, &session).await;
    let mut rows: Vec<TemplateRow> = templates
        .iter()
        .map(|t| TemplateRow::of(t).named(&names))
        .collect();
    let sort = SortKey::parse(&f.sort);
    let desc = f.desc == "1";
    if let Some(key) = sort {
        sort_templates(&mut rows, key, desc);
    }
    let base = format!("/console/templates?status={status}&merchant_id={merchant_id}");
    let sorted = match sort {
        Some(_) => format!(
            "{base}&sort={}{}",
            f.sort,
            if desc { "&desc=1" } else { "" }
        ),
        None => base.clone(),
    };
    // The page links keep the filter and the sort.
    let pager = Pager::new(&sorted, rows.len(), f.page.trim().parse().unwrap_or(1));
    let merchants = choices::merchants(&console, &session, &names);
    let page = ListPage {
        merchant_name: choices::label_of(merchants.as_deref(), &merchant_id),
        merchants,
        shell: Shell::new(&session, "Templates"),
        platform: session.is_platform(),
        status: status.to_owned(),
        statuses,
        columns: columns(&base, sort, desc),
        cut: cut.then(|| cut_note(session.is_platform())),
        merchant_id,
        rows: pager.slice(rows),
        pager,
    };
    render(StatusCode::OK, &page)
}

/// Every template `filter` picks that the session may read (up to
/// [`MAX_ROWS`](super::paging::MAX_ROWS)), in the application's order.
pub(super) async fn gather_templates(
    console: &Console,
    session: &Session,
    filter: TemplateFilter,
) -> Result<Gathered<TemplateView>, Problem> {
    let app = console.app();
    let read = |page| {
        let listed = app.templates(&session.principal, filter.clone(), page);
        session.act(app, templates::READ, listed)
    };
    gather_all(console, read).await
}

/// What the templates page says when the list was cut at
/// [`MAX_ROWS`](super::paging::MAX_ROWS).
fn cut_note(platform: bool) -> String {
    let narrow = if platform {
        "filter by status or merchant"
    } else {
        "filter by status"
    };
    format!(
        "Showing the first {} templates; {narrow} to see the others.",
        max_rows_words()
    )
}

/// The sortable headers of the templates table: a second click on the current column
/// reverses it.
fn columns(base: &str, sort: Option<SortKey>, desc: bool) -> Vec<Column> {
    let labels = [
        ("Template", false),
        ("Status", false),
        ("Claimed / stock", true),
        ("Used", true),
        ("Budget used", true),
        ("Usable until", false),
        ("Last change", false),
    ];
    SortKey::ALL
        .iter()
        .zip(labels)
        .map(|((key, name), (label, num))| {
            let current = sort == Some(*key);
            let reverse = current && !desc;
            Column {
                label,
                href: format!("{base}&sort={name}{}", if reverse { "&desc=1" } else { "" }),
                arrow: match (current, desc) {
                    (false, _) => "↕",
                    (true, false) => "▲",
                    (true, true) => "▼",
                },
                sorted: match (current, desc) {
                    (false, _) => "",
                    (true, false) => "ascending",
                    (true, true) => "descending",
                },
                num,
            }
        })
        .collect()
}

/// A bulk issuance job, as its progress bar shows it.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: i64,
    pub state: String,
    pub handled: u64,
    pub requested: u64,
    pub issued: u64,
    pub skipped: u64,
    pub sold_out: u64,
    pub invalid: u64,
    /// The invalid lines the API lists (the first 100): (line number, text).
    pub invalid_lines: Vec<(u64, String)>,
    pub done: bool,
    /// The job's template.
    pub template: i64,
}

impl Job {
    fn of(j: &IssuanceView) -> Self {
        Job {
            id: j.id,
            done: j.state == "done" || j.state == "failed",
            state: j.state.clone(),
            handled: j.handled,
            requested: j.requested,
            issued: j.issued,
            skipped: j.skipped,
            sold_out: j.sold_out,
            invalid: j.invalid,
            invalid_lines: j
                .invalid_lines
                .iter()
                .map(|l| (l.line, l.text.clone()))
                .collect(),
            template: j.template_id.get(),
        }
    }
}

/// What a template's page shows beside the template, each read on its own: what the caller
/// may not read (finance and the stats' charts, say) shows as nothing.
#[derive(Template)]
#[template(path = "template.html")]
struct TemplatePage {
    shell: Shell,
    t: TemplateRow,
    claim_window: String,
    budget: String,
    reserved: String,
    /// What refunds changed in the cards, where they did: the uses and the discount before
    /// them (`2 used, 1 refunded`; `200.00 given, 100.00 refunded`).
    used_refunds: Option<String>,
    given_refunds: Option<String>,
    /// What the API says the caller may do now (`actions`), one flag each: the page offers
    /// exactly those.
    can_publish: bool,
    can_abort: bool,
    can_top_up: bool,
    can_extend: bool,
    can_codes: bool,
    can_issue: bool,
    /// Campaign messages sent about it, newest first.
    messages: Vec<campaign::Sent>,
    can_approve: bool,
    can_reject: bool,
    can_delete: bool,
    can_edit: bool,
    can_pause: bool,
    can_resume: bool,
    can_stop: bool,
    /// The pause in force, in words (since when, why, whose).
    paused: Option<String>,
    /// Its terms in words, its activity (id), and its changes, newest first.
    facts: Vec<facts::Fact>,
    /// Its activity: id and title.
    activity: Option<(i64, String)>,
    changes: Vec<facts::Change>,
    /// The platform's review, in words, where its activity requires one.
    review: Option<String>,
    /// The current ends, as `datetime-local` values: the claim window's, a fixed validity's.
    claim_end: String,
    valid_until: Option<String>,
    /// Its code batches: (id, state, prefix, count, generated, created).
    batches: Vec<(i64, String, String, u64, u64, String)>,
    chart: Chart,
    hours: u32,
    /// The range shown, in words, and those to pick from.
    range: String,
    ranges: Vec<(u32, String)>,
    jobs: Vec<Job>,
    /// The code form's values and what the page says about them.
    codes: CodesForm,
    /// The first holders of its coupons: (coupon id, user, status).
    holders: Vec<(i64, String, String)>,
    notice: Option<String>,
}

/// The platform's review of an enrollment in words: waiting, approved on a day, or
/// rejected on a day with the reason.
fn review(r: &ReviewView) -> Option<String> {
    let when = r.reviewed_at.map(super::format::at).unwrap_or_default();
    match r.decision.as_str() {
        "pending" => Some("Waiting for the platform's approval.".into()),
        "approved" => Some(format!("Approved by the platform on {when}.")),
        "rejected" => Some(format!(
            "Rejected by the platform on {when}: {}. Editing it asks again.",
            r.reason.as_deref().unwrap_or("no reason given")
        )),
        _ => None,
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct Notice {
    /// Set by the pages that answer a form, in words.
    #[serde(default)]
    notice: String,
    /// The chart's range in hours (one of [`RANGES`]).
    #[serde(default)]
    hours: Option<u32>,
}

/// The chart's ranges a person picks from.
/// The chart's ranges a person picks from, in hours; past a week the chart is per day.
const RANGES: [u32; 5] = [24, 48, 168, 720, 2160];

/// A range in words, and its buckets.
fn range(hours: u32) -> (String, Unit) {
    if hours > 168 {
        (format!("last {} days, per day", hours / 24), Unit::Day)
    } else {
        (format!("last {hours} hours, per hour"), Unit::Hour)
    }
}

pub async fn page(
    State(console): State<Console>,
    session: Session,
    Path(id): Path<i64>,
    Query(n): Query<Notice>,
) -> Response {
    render_page(
        &console,
        &session,
        id,
        n,
        CodesForm::default(),
        StatusCode::OK,
    )
    .await
}

/// The code form as sent back to its page: what was typed, and what the page says about it
/// (the API's refusal naming its field, or a batch larger than the stock left).
#[derive(Debug, Default, Clone)]
pub struct CodesForm {
    pub count: String,
    pub prefix: String,
    pub error: Option<String>,
    /// `(asked, left)`: more codes asked for than coupons left to claim.
    pub over_stock: Option<(u32, i64)>,
}

/// Template `id` as the session may read it, with its actions.
pub(super) async fn read(
    console: &Console,
    session: &Session,
    id: i64,
) -> Result<TemplateView, Problem> {
    let app = console.app();
    let read = async {
        let id = TemplateId::new(id).map_err(|_| AppError::NotFound)?;
        app.template(&session.principal, id).await
    };
    session.act(app, templates::READ, read).await
}

/// A template's page, with `codes` in its code form.
pub(super) async fn render_page(
    console: &Console,
    session: &Session,
    id: i64,
    n: Notice,
    codes: CodesForm,
    status: StatusCode,
) -> Response {
    let hours = n.hours.filter(|h| RANGES.contains(h)).unwrap_or(48);
    let t = match read(console, session, id).await {
        Ok(t) => t,
        Err(p) => return problem_page(session, &p),
    };
    let side = Side::read(console, session, id, hours).await;
    let row = TemplateRow::of(&t);
    let may = |action: TemplateAction| t.actions.iter().flatten().any(|a| *a == action);
    let local = |at: Timestamp| at.to_string().chars().take(16).collect::<String>();
    let window = t.terms.claim_window;
    let page = TemplatePage {
        can_extend: may(TemplateAction::Extend),
        can_codes: may(TemplateAction::Codes),
        can_issue: may(TemplateAction::Issue),
        can_approve: may(TemplateAction::Approve),
        can_reject: may(TemplateAction::Reject),
        can_delete: may(TemplateAction::Delete),
        can_edit: may(TemplateAction::Edit),
        can_pause: may(TemplateAction::Pause),
        can_resume: may(TemplateAction::Resume),
        can_stop: may(TemplateAction::Stop),
        paused: t.paused.as_ref().map(super::steering::pause_words),
        facts: facts::facts(&t, &CityNames::load(console, session).await),
        activity: match t.terms.activity_id {
            Some(a) => Some((a.get(), activity_title(console, session, a.get()).await)),
            None => None,
        },
        changes: facts::changes(&side.history),
        review: t.review.as_ref().and_then(review),
        claim_end: window.map(|w| local(w.end)).unwrap_or_default(),
        valid_until: match t.terms.validity {
            Validity::Fixed { until, .. } => Some(local(until)),
            _ => None,
        },
        batches: side
            .batches
            .iter()
            .map(|b| {
                let state = match b.status {
                    CodeBatchStatus::Pending => "pending",
                    CodeBatchStatus::Done => "done",
                };
                (
                    b.id,
                    state.to_owned(),
                    b.prefix.clone(),
                    u64::from(b.count),
                    u64::from(b.generated),
                    super::format::at(b.created_at),
                )
            })
            .collect(),
        holders: side
            .holders
            .iter()
            .map(|c| {
                (
                    c.id.get(),
                    c.user_id.as_str().to_owned(),
                    c.status.as_str().to_owned(),
                )
            })
            .collect(),
        shell: Shell::new(session, row.title.clone()),
        can_publish: may(TemplateAction::Publish),
        can_abort: may(TemplateAction::Abort),
        can_top_up: may(TemplateAction::RaiseStock),
        claim_window: match window {
            Some(w) if t.claim_window_follows_activity => {
                format!("{} (the activity's run)", span(&w))
            }
            Some(w) => span(&w),
            None => "the activity's run".into(),
        },
        budget: t
            .terms
            .budget
            .map(|b| money(b.minor()))
            .unwrap_or_else(|| "no cap".into()),
        reserved: money(t.reserved.minor()),
        used_refunds: side.stats.as_ref().and_then(|s| {
            (s.refunded > 0)
                .then(|| format!("{} used, {} refunded", s.used + s.refunded, s.refunded))
        }),
        given_refunds: side.stats.as_ref().and_then(|s| {
            let back = s.discount_refunded.minor();
            (back > 0).then(|| {
                let before = s.discount_given.minor() + back;
                format!("{} given, {} refunded", money(before), money(back))
            })
        }),
        chart: chart_of(side.stats.as_ref(), range(hours).1),
        hours,
        range: range(hours).0,
        ranges: RANGES.iter().map(|h| (*h, range(*h).0)).collect(),
        jobs: side.jobs.iter().rev().take(5).map(Job::of).collect(),
        messages: side.messages,
        notice: Some(n.notice).filter(|s| !s.is_empty() && s.len() < 200),
        codes,
        t: row,
    };
    render(status, &page)
}

/// The chart of a template's stats: its hours, or its days.
fn chart_of(stats: Option<&TemplateStats>, unit: Unit) -> Chart {
    let slots: Vec<Slot> = match (stats, unit) {
        (None, _) => vec![],
        (Some(s), Unit::Hour) => s.per_hour.iter().map(Slot::from).collect(),
        (Some(s), Unit::Day) => s.per_day.iter().map(Slot::from).collect(),
    };
    Chart::of(&slots, unit)
}

/// The holders of a template's coupons as CSV: every one, the application's pages streamed
/// through as one download.
pub async fn holders_csv(
    State(console): State<Console>,
    session: Session,
    Path(id): Path<i64>,
) -> Response {
    let app = console.app();
    let pieces = match TemplateId::new(id) {
        Ok(t) => {
            let every = HoldersFilter::default();
            let all = app.every_holder_csv(&session.principal, t, every, PageRequest::default());
            session.act(app, coupond_app::coupons::HOLDERS, all).await
        }
        Err(_) => Err(Problem::from(AppError::NotFound)),
    };
    download(&session, pieces, &format!("template-{id}-coupons.csv"))
}
