//! Activities: the list (the platform sees all; a merchant those enrolling in its cities), the
//! platform's form to create one, and an activity's page with its stats.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use coupond_api::views::ActivityView;
use coupond_app::activities::{self, ActivityFilter};
use coupond_app::reports::{self, ActivityStats, StatsQuery};
use coupond_app::template_reads::TemplateFilter;
use coupond_app::templates;
use coupond_app::AppError;
use coupond_domain::{
    ActivityAction, ActivityDraft, ActivityId, ActivityPatch, Approval, CouponKind, Funding,
    Reference, Timestamp, Window,
};
use serde::Deserialize;

use super::format::{decimal, hundredths, money, percent};
use super::names::{typed_cities, CityNames, MerchantNames};
use super::paging::{next_link, request, rows, After};
use super::templates::Slot;
use super::{guard, problem_page, render, ActivityRow, FieldErrors, Shell, Shown, TemplateRow};
use crate::problem::Problem;
use crate::session::Session;
use crate::Console;

#[derive(Template)]
#[template(path = "activities.html")]
struct ListPage {
    shell: Shell,
    platform: bool,
    rows: Vec<ActivityRow>,
    /// The link to the next page of activities, if there are more.
    next: Option<String>,
}

/// A page of activities ([`PER_PAGE`](super::paging::PER_PAGE), after the API cursor `after`).
pub async fn list(
    State(console): State<Console>,
    session: Session,
    Query(q): Query<After>,
) -> Response {
    let app = console.app();
    let found = app.activities(
        &session.principal,
        ActivityFilter::default(),
        request(&console, &q.after),
    );
    let page = session.act(app, activities::READ, found).await;
    let cities = CityNames::load(&console, &session).await;
    match page.map(rows) {
        Ok((activities, next)) => render(
            StatusCode::OK,
            &ListPage {
                shell: Shell::new(&session, "Activities"),
                platform: session.is_platform(),
                rows: activities
                    .iter()
                    .map(|a| ActivityRow::of(a).named(&cities))
                    .collect(),
                next: next_link("/console/activities", &next),
            },
        ),
        Err(p) => problem_page(&session, &p),
    }
}

/// The create form as sent: money in major units, percentages in %, instants in UTC.
#[derive(Debug, Default, Deserialize)]
pub struct ActivityForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    cities: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    value_min: String,
    #[serde(default)]
    value_max: String,
    #[serde(default)]
    enrollment_start: String,
    #[serde(default)]
    enrollment_end: String,
    #[serde(default)]
    run_start: String,
    #[serde(default)]
    run_end: String,
    /// The platform's share of each discount, in percent (`60`, `12.5`); blank: 0, each
    /// merchant pays its own.
    #[serde(default)]
    platform_share: String,
    /// `required`: merchants' templates wait for the platform's approval.
    #[serde(default)]
    approval: String,
}

/// An option of a select.
#[derive(Debug, Clone)]
pub(super) struct Choice {
    pub value: &'static str,
    pub label: &'static str,
    pub selected: bool,
}

const KINDS: [(&str, &str); 7] = [
    ("amount_off", "Amount off"),
    ("percent_off", "Percent off"),
    ("free_days", "Free days"),
    ("deposit_waiver", "Deposit waiver"),
    ("special_price", "Special price"),
    ("free_shipping", "Free shipping"),
    ("buy_x_get_y", "Buy X get Y"),
];

#[derive(Template)]
#[template(path = "activity_new.html")]
struct NewPage {
    shell: Shell,
    /// Where the form posts, its heading and its button: creating or editing.
    action: String,
    heading: String,
    submit: &'static str,
    kinds: Vec<Choice>,
    form: ActivityForm,
    errors: FieldErrors,
    error: Option<String>,
}

pub async fn new(session: Session) -> Response {
    let form = ActivityForm {
        kind: "amount_off".into(),
        platform_share: "100".into(),
        approval: "none".into(),
        ..ActivityForm::default()
    };
    new_page(&session, form, Shown::ok())
}

fn new_page(session: &Session, form: ActivityForm, shown: Shown) -> Response {
    let target = Target {
        action: "/console/activities".into(),
        heading: "New activity".into(),
        submit: "Create activity",
    };
    form_page(session, target, form, shown)
}

/// Where an activity form goes.
struct Target {
    action: String,
    heading: String,
    submit: &'static str,
}

fn form_page(session: &Session, target: Target, form: ActivityForm, shown: Shown) -> Response {
    let page = NewPage {
        shell: Shell::new(session, target.heading.clone()),
        action: target.action,
        heading: target.heading,
        submit: target.submit,
        kinds: KINDS
            .iter()
            .map(|(value, label)| Choice {
                value,
                label,
                selected: form.kind == *value,
            })
            .collect(),
        form,
        errors: shown.errors,
        error: shown.error,
    };
    render(shown.status, &page)
}

pub async fn create(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Form(form): Form<ActivityForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &form.csrf) {
        return refused;
    }
    let draft = match draft(&form) {
        Ok(d) => d,
        Err((field, why)) => {
            return new_page(&session, form, Shown::field(field, why));
        }
    };
    let app = console.app();
    match session
        .act(app, activities::EDIT, app.create_activity(draft))
        .await
    {
        Ok(a) => Redirect::to(&format!("/console/activities/{}", a.id)).into_response(),
        Err(p) => new_page(&session, form, Shown::of(&p)),
    }
}

/// The activity the form describes; a field that cannot be read is named with why.
fn draft(f: &ActivityForm) -> Result<ActivityDraft, (&'static str, String)> {
    let cities = typed_cities(&f.cities).map_err(|why| ("cities", why))?;
    let kind = CouponKind::parse(&f.kind).ok_or(("kind", "choose a kind".to_owned()))?;
    // Percent with two decimals is basis points; the rule says if it is out of range.
    let platform_bps = match f.platform_share.trim() {
        "" => 0,
        share => hundredths("platform_share", share)?,
    };
    let funding =
        Funding::platform_share(platform_bps).map_err(|e| ("platform_share", e.message))?;
    let approval = match f.approval.as_str() {
        "" | "none" => Approval::None,
        "required" => Approval::Required,
        _ => return Err(("approval", "none or required".to_owned())),
    };
    Ok(ActivityDraft {
        title: f.title.clone(),
        description: f.description.clone(),
        cities,
        kind,
        value_min: hundredths("value_min", &f.value_min)?,
        value_max: hundredths("value_max", &f.value_max)?,
        enrollment: window("enrollment", &f.enrollment_start, &f.enrollment_end)?,
        run: window("run", &f.run_start, &f.run_end)?,
        funding: Some(funding),
        funded_by: None,
        approval,
        reference: Reference::default(),
    })
}

/// The window between two `datetime-local` values read as UTC, named `field` if it is not one.
fn window(field: &'static str, start: &str, end: &str) -> Result<Window, (&'static str, String)> {
    let at = |s: &str| Timestamp::parse(&utc(s)).map_err(|why| (field, why));
    Window::new(at(start)?, at(end)?).map_err(|why| (field, why))
}

/// The edit the form saves: every field it shows, so the rules apply to the activity as
/// changed (its reference stays).
fn patch(f: &ActivityForm) -> Result<ActivityPatch, (&'static str, String)> {
    let d = draft(f)?;
    Ok(ActivityPatch {
        title: Some(d.title),
        description: Some(d.description),
        cities: Some(d.cities),
        kind: Some(d.kind),
        value_min: Some(d.value_min),
        value_max: Some(d.value_max),
        enrollment: Some(d.enrollment),
        run: Some(d.run),
        funding: d.funding,
        approval: Some(d.approval),
        ..ActivityPatch::default()
    })
}

/// A `datetime-local` value (`2026-11-24T12:00`) read as UTC.
pub(super) fn utc(s: &str) -> String {
    let s = s.trim();
    if s.len() == 16 {
        format!("{s}:00Z")
    } else {
        s.to_owned()
    }
}

#[derive(Template)]
#[template(path = "activity.html")]
struct ActivityPage {
    shell: Shell,
    /// What the API says the caller may do now (`actions`): the page offers exactly those.
    can_edit: bool,
    can_abort: bool,
    can_enroll: bool,
    can_pause: bool,
    can_resume: bool,
    /// The pause in force, in words.
    paused: Option<String>,
    a: ActivityRow,
    /// Its description, and who funds its discounts, in words.
    description: String,
    funding: String,
    /// A page of its templates, and the link to the next.
    rows: Vec<TemplateRow>,
    next: Option<String>,
    enrolled: usize,
    claimed: i64,
    used: i64,
    given: String,
    /// What refunds changed in the cards, where they did (as on a template's page).
    used_refunds: Option<String>,
    given_refunds: Option<String>,
    chart: super::templates::Chart,
}

/// Whether the API's answer names `action` among those its caller may take now.
fn offers(a: &ActivityView, action: ActivityAction) -> bool {
    a.actions.iter().flatten().any(|x| *x == action)
}

/// Activity `id` as the session may see it.
pub(super) async fn read(
    console: &Console,
    session: &Session,
    id: i64,
) -> Result<ActivityView, Problem> {
    let app = console.app();
    let read = async {
        let id = ActivityId::new(id).map_err(|_| AppError::NotFound)?;
        app.activity(&session.principal, id).await
    };
    session.act(app, activities::READ, read).await
}

/// An activity with its stats and a page of its templates (after the API cursor `after`).
pub async fn page(
    State(console): State<Console>,
    session: Session,
    Path(id): Path<i64>,
    Query(q): Query<After>,
) -> Response {
    let a = match read(&console, &session, id).await {
        Ok(a) => a,
        Err(p) => return problem_page(&session, &p),
    };
    // A merchant's figures are those of its own templates in it; none when it has none.
    let app = console.app();
    let window = StatsQuery {
        hours: Some(48),
        days: None,
    };
    let stats = app.activity_stats(&session.principal, a.id, &window);
    let stats = session.act(app, reports::FIGURES, stats).await.ok();
    let filter = TemplateFilter {
        activity: Some(a.id),
        ..TemplateFilter::default()
    };
    let listed = app.templates(&session.principal, filter, request(&console, &q.after));
    let (templates, next) = match session.act(app, templates::READ, listed).await {
        Ok(t) => rows(t),
        Err(p) => return problem_page(&session, &p),
    };
    let totals = stats.as_ref().map(|s| &s.totals);
    let page = ActivityPage {
        shell: Shell::new(&session, a.terms.title.clone()),
        can_edit: offers(&a, ActivityAction::Edit),
        can_abort: offers(&a, ActivityAction::Abort),
        can_enroll: offers(&a, ActivityAction::Enroll),
        can_pause: offers(&a, ActivityAction::Pause),
        can_resume: offers(&a, ActivityAction::Resume),
        paused: a.paused.as_ref().map(super::steering::pause_words),
        description: a.terms.description.clone(),
        funding: funding(a.terms.funding.unwrap_or_default()),
        a: ActivityRow::of(&a).named(&CityNames::load(&console, &session).await),
        rows: {
            let merchants = MerchantNames::load(&console, &session).await;
            templates
                .iter()
                .map(|t| TemplateRow::of(t).named(&merchants))
                .collect()
        },
        next: next_link(&format!("/console/activities/{id}"), &next),
        enrolled: stats.as_ref().map_or(0, |s| s.merchants.len()),
        claimed: totals.map_or(0, |t| t.claimed),
        used: totals.map_or(0, |t| t.used),
        given: super::format::money(totals.map_or(0, |t| t.discount_given)),
        used_refunds: totals
            .filter(|t| t.refunded > 0)
            .map(|t| format!("{} used, {} refunded", t.used + t.refunded, t.refunded)),
        given_refunds: totals.filter(|t| t.discount_refunded > 0).map(|t| {
            let (back, before) = (t.discount_refunded, t.discount_given + t.discount_refunded);
            format!("{} given, {} refunded", money(before), money(back))
        }),
        chart: super::templates::Chart::of(
            &stats.as_ref().map(hours_of).unwrap_or_default(),
            super::templates::Unit::Hour,
        ),
    };
    render(StatusCode::OK, &page)
}

/// Who pays the discounts of an activity's templates, in words.
fn funding(f: Funding) -> String {
    match f.platform_bps() {
        10_000 => "the platform pays the discounts".into(),
        0 => "each merchant pays its own templates' discounts".into(),
        bps => format!(
            "the platform pays {} of each discount, the merchant the rest",
            percent(i64::from(bps))
        ),
    }
}

/// The activity's claims and uses per hour: its templates' hours (every hour of the window)
/// added up, oldest first.
fn hours_of(stats: &ActivityStats) -> Vec<Slot> {
    let mut sum: std::collections::BTreeMap<Timestamp, Slot> = Default::default();
    for h in stats.templates.iter().flat_map(|t| &t.per_hour) {
        let h = Slot::from(h);
        let e = sum.entry(h.at).or_insert(Slot {
            at: h.at,
            date: String::new(),
            claimed: 0,
            used: 0,
            discount: 0,
            refunded: 0,
            refunded_discount: 0,
        });
        e.claimed += h.claimed;
        e.used += h.used;
        e.discount += h.discount;
        e.refunded += h.refunded;
        e.refunded_discount += h.refunded_discount;
    }
    sum.into_values().collect()
}

fn edit_target(id: i64) -> Target {
    Target {
        action: format!("/console/activities/{id}"),
        heading: format!("Edit activity {id}"),
        submit: "Save changes",
    }
}

/// The edit form, filled from the activity as the API has it (the platform, until it
/// freezes: the API refuses later edits and the page says why).
pub async fn edit(
    State(console): State<Console>,
    session: Session,
    Path(id): Path<i64>,
) -> Response {
    let a = match read(&console, &session, id).await {
        Ok(a) => a.terms,
        Err(p) => return problem_page(&session, &p),
    };
    // `2026-11-24T12:00:00Z` as `2026-11-24T12:00`, what a datetime-local input takes.
    let local = |t: Timestamp| t.to_string().chars().take(16).collect::<String>();
    let cities: Vec<String> = a.cities.iter().map(|c| c.get().to_string()).collect();
    let form = ActivityForm {
        csrf: String::new(),
        title: a.title,
        description: a.description,
        cities: cities.join(", "),
        kind: a.kind.as_str().to_owned(),
        value_min: decimal(a.value_min),
        value_max: decimal(a.value_max),
        enrollment_start: local(a.enrollment.start),
        enrollment_end: local(a.enrollment.end),
        run_start: local(a.run.start),
        run_end: local(a.run.end),
        platform_share: form_percent(a.funding.unwrap_or_default().platform_bps()),
        approval: a.approval.as_str().to_owned(),
    };
    form_page(&session, edit_target(id), form, Shown::ok())
}

/// Saves the edit form: the whole form as a `PATCH`, so the API applies its rules to the
/// activity as changed.
pub async fn update(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<ActivityForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &form.csrf) {
        return refused;
    }
    let patch = match patch(&form) {
        Ok(p) => p,
        Err((field, why)) => {
            return form_page(&session, edit_target(id), form, Shown::field(field, why));
        }
    };
    let app = console.app();
    let edit = async {
        let id = ActivityId::new(id).map_err(|_| AppError::NotFound)?;
        app.edit_activity(id, patch).await
    };
    match session.act(app, activities::EDIT, edit).await {
        Ok(_) => Redirect::to(&format!("/console/activities/{id}")).into_response(),
        Err(p) => form_page(&session, edit_target(id), form, Shown::of(&p)),
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct AbortForm {
    #[serde(default)]
    csrf: String,
}

/// Aborts an activity (the platform): its templates stop being claimable and usable.
pub async fn abort(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<AbortForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &f.csrf) {
        return refused;
    }
    let app = console.app();
    let aborted = async {
        let id = ActivityId::new(id).map_err(|_| AppError::NotFound)?;
        app.abort_activity(id).await
    };
    if let Err(p) = session.act(app, activities::EDIT, aborted).await {
        return problem_page(&session, &p);
    }
    Redirect::to(&format!("/console/activities/{id}")).into_response()
}

/// Basis points as the percent the form shows (`60`, `12.5`).
fn form_percent(bps: u16) -> String {
    match (bps / 100, bps % 100) {
        (whole, 0) => whole.to_string(),
        (whole, part) if part % 10 == 0 => format!("{whole}.{}", part / 10),
        (whole, part) => format!("{whole}.{part:02}"),
    }
}
