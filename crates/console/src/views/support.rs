//! The platform's support and money pages: a user's coupons (the merchant sees only its
//! templates' coupons, as the API decides), tags, when the user was last seen and a preview of what the user may claim now
//! (the platform's, as the API decides) with a revoke button per coupon, and the
//! reconciliation of a period with its CSV download.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use coupond_api::pagination::csv_answer;
use coupond_api::routes::contacts::ContactView;
use coupond_api::views::{CouponView, OfferView};
use coupond_app::pages::PageRequest;
use coupond_app::reports::{self, Reconciliation};
use coupond_app::{centre, contacts, coupons, users, AppError};
use coupond_domain::{CouponAction, CouponId, Note, Timestamp, UserId};
use coupond_engine::centre::Filter;
use serde::Deserialize;

use super::activities::utc;
use super::format::{at, money, percent, worth};
use super::names::MerchantNames;
use super::paging::{next_link, request, rows};
use super::{attachment, guard, problem_page, render, Shell};
use crate::session::Session;
use crate::Console;

/// A coupon as a row.
#[derive(Debug, Clone)]
struct CouponRow {
    id: i64,
    template: String,
    status: String,
    usable: bool,
    why: String,
    valid_until: String,
    /// Whether revoking makes sense (an unused or locked coupon).
    revocable: bool,
}

impl CouponRow {
    fn of(c: &CouponView) -> Self {
        let why: Vec<String> = c
            .unusable_reasons
            .iter()
            .map(|r| r.as_str().to_owned())
            .collect();
        CouponRow {
            id: c.id.get(),
            template: c.template.title.clone(),
            usable: c.usable,
            why: why.join(", "),
            valid_until: at(c.valid_until),
            revocable: c
                .actions
                .iter()
                .flatten()
                .any(|a| *a == CouponAction::Revoke),
            status: c.status.as_str().to_owned(),
        }
    }
}

/// How many templates the claimable preview shows.
const PREVIEW: u32 = 10;

/// A template the user may claim now, as a row of the preview.
#[derive(Debug, Clone)]
struct OfferRow {
    id: i64,
    title: String,
    worth: String,
    /// `12 left` or `sold out`.
    stock: String,
    /// `holds 1 of 2`.
    held: String,
    claim_ends: String,
    can_claim: bool,
}

impl OfferRow {
    fn of(o: &OfferView) -> Self {
        OfferRow {
            id: o.template_id.get(),
            title: o.title.clone(),
            worth: worth(&o.value),
            stock: if o.sold_out {
                "sold out".into()
            } else {
                format!("{} left", o.remaining)
            },
            held: format!("holds {} of {}", o.held, o.per_user_limit),
            claim_ends: at(o.claim_window.end),
            can_claim: o.can_claim,
        }
    }
}

/// The first templates `user` may claim now, and whether more follow; `None` where the
/// caller may not see them (a merchant: the API says 403).
async fn claimable_preview(
    console: &Console,
    session: &Session,
    user: &UserId,
) -> Option<(Vec<OfferRow>, bool)> {
    let app = console.app();
    let offers = app.claimable(user, Filter::default(), PageRequest::first(PREVIEW));
    let page = session.act(app, centre::FOR_USER, offers).await.ok()?;
    let rows = page.items.iter().map(OfferRow::of).collect();
    Some((rows, page.next_cursor.is_some()))
}

#[derive(Debug, Default, Deserialize)]
pub struct Lookup {
    #[serde(default)]
    user: String,
    /// Which page of the user's coupons: the API's `next_cursor` of the page before.
    #[serde(default)]
    after: String,
}

#[derive(Template)]
#[template(path = "users.html")]
struct UsersPage {
    shell: Shell,
    user: String,
    /// A page of the user's coupons, and the link to the next.
    coupons: Vec<CouponRow>,
    next: Option<String>,
    tags: Vec<String>,
    /// When the user was last seen, in words (`never` if not yet); `None` where the caller may
    /// not read it (merchants).
    last_seen: Option<String>,
    /// What the user may claim now (the first [`PREVIEW`]), for the platform only.
    claimable: Option<Vec<OfferRow>>,
    /// More than the preview shows may be claimed.
    more_claimable: bool,
    /// Where the user can be reached and their choices (the platform's).
    contact: Option<ContactCard>,
    error: Option<String>,
}

/// A user's contact points and choices, in words.
#[derive(Debug, Clone)]
struct ContactCard {
    email: String,
    phone: String,
    locale: String,
    time_zone: String,
    /// `(channel, kind, on)` of the choices made; kinds not named are on.
    choices: Vec<(String, String, bool)>,
}

impl ContactCard {
    fn of(c: &ContactView) -> Self {
        let none = || "—".to_owned();
        ContactCard {
            email: c.email.clone().unwrap_or_else(none),
            phone: c.phone.clone().unwrap_or_else(none),
            locale: c.locale.clone().unwrap_or_else(|| "the platform's".into()),
            time_zone: c
                .time_zone
                .clone()
                .unwrap_or_else(|| "the platform's".into()),
            choices: c
                .preferences
                .iter()
                .flat_map(|(ch, kinds)| {
                    kinds
                        .iter()
                        .map(move |(k, on)| (ch.clone(), k.clone(), *on))
                })
                .collect(),
        }
    }
}

pub async fn users(
    State(console): State<Console>,
    session: Session,
    Query(q): Query<Lookup>,
) -> Response {
    let user = q.user.trim().to_owned();
    let mut page = UsersPage {
        shell: Shell::new(&session, "Users"),
        user: user.clone(),
        coupons: Vec::new(),
        next: None,
        tags: Vec::new(),
        last_seen: None,
        claimable: None,
        more_claimable: false,
        contact: None,
        error: None,
    };
    match (!user.is_empty()).then(|| UserId::parse(&user)) {
        Some(Ok(id)) => look_up(&console, &session, &mut page, id, &q.after).await,
        Some(Err(why)) => page.error = Some(format!("A {why}.")),
        None => {}
    }
    render(StatusCode::OK, &page)
}

/// What the page shows of user `id`: a page of their coupons (after cursor `after`) and,
/// where the session may read them, their tags, contact points, when they were last seen and
/// what they may claim now.
async fn look_up(
    console: &Console,
    session: &Session,
    page: &mut UsersPage,
    id: UserId,
    after: &str,
) {
    let (app, user) = (console.app(), id.as_str().to_owned());
    let wallet = app.wallet(
        &session.principal,
        id.clone(),
        None,
        request(console, after),
    );
    match session.act(app, users::WALLET, wallet).await.map(rows) {
        Ok((coupons, next)) => {
            page.coupons = coupons.iter().map(CouponRow::of).collect();
            page.next = next_link(&format!("/console/users?user={user}"), &next);
        }
        Err(p) => page.error = Some(p.detail),
    }
    // Tags are the platform's; a merchant is not shown them (the application refuses).
    if let Ok(t) = session
        .act(app, users::PROFILE, app.user_tags(id.clone()))
        .await
    {
        page.tags = t.tags.iter().map(|t| t.as_str().to_owned()).collect();
    }
    // Contact points are the platform's too.
    if let Ok(c) = session.act(app, contacts::READ, app.contact(&id)).await {
        page.contact = Some(ContactCard::of(&c));
    }
    // So is when the user was last seen.
    if let Ok(seen) = session
        .act(app, users::PROFILE, app.last_seen(id.clone()))
        .await
    {
        page.last_seen = Some(seen.last_seen_at.map_or_else(|| "never".to_owned(), at));
    }
    if let Some((rows, more)) = claimable_preview(console, session, &id).await {
        page.claimable = Some(rows);
        page.more_claimable = more;
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct RevokeForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    user: String,
}

pub async fn revoke(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(f): Form<RevokeForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &f.csrf) {
        return refused;
    }
    // An empty reason is refused, in words: nothing stands in for one.
    let app = console.app();
    let revoked = async {
        let reason = Note::parse("reason", f.reason.trim())?;
        let id = CouponId::new(id).map_err(|_| AppError::NotFound)?;
        app.revoke_coupon(&session.principal, id, &reason).await
    };
    if let Err(p) = session.act(app, coupons::REVOKE, revoked).await {
        return problem_page(&session, &p);
    }
    let user: String = f
        .user
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "_.:@-".contains(*c))
        .collect();
    if user.is_empty() {
        return Redirect::to(&format!("/console/coupons/{id}")).into_response();
    }
    Redirect::to(&format!("/console/users?user={user}")).into_response()
}

#[derive(Debug, Default, Deserialize)]
pub struct Period {
    #[serde(default)]
    from: String,
    #[serde(default)]
    to: String,
    #[serde(default)]
    format: String,
}

/// Who pays a line: `platform`, `merchant`, or the platform's share when split.
fn funded_by(label: &str, bps: u16) -> String {
    match label {
        "shared" => format!("platform {}", percent(i64::from(bps))),
        other => other.to_owned(),
    }
}

/// A reconciliation row.
#[derive(Debug, Clone)]
struct Row {
    template: String,
    merchant: String,
    funded_by: String,
    used: i64,
    discount: String,
    /// Refunds made in the period (a count), and the discount they took back (money).
    refunds: i64,
    refunded: String,
    net: String,
}

#[derive(Template)]
#[template(path = "reconciliation.html")]
struct ReconciliationPage {
    shell: Shell,
    from: String,
    to: String,
    rows: Vec<Row>,
    /// (funder, used, discount, refunds, refunded discount, net)
    totals: Vec<(String, i64, String, i64, String, String)>,
    error: Option<String>,
}

/// The reconciliation of a period: opened without one, this month so far (UTC).
pub async fn reconciliation(
    State(console): State<Console>,
    session: Session,
    Query(mut q): Query<Period>,
) -> Response {
    // One who may not read it (a merchant) gets no form to fill.
    if !session.may_do(reports::RECONCILIATION) {
        let refused = crate::problem::Problem {
            status: 403,
            code: "forbidden".into(),
            field: None,
            detail: "The reconciliation is the platform's report; your role cannot read it.".into(),
            fields: Vec::new(),
        };
        return problem_page(&session, &refused);
    }
    if q.from.is_empty() && q.to.is_empty() {
        let now = console.app().now().to_string();
        q.from = format!("{}-01T00:00", &now[..7]);
        q.to = now.chars().take(16).collect();
    }
    let mut page = ReconciliationPage {
        shell: Shell::new(&session, "Reconciliation"),
        from: q.from.clone(),
        to: q.to.clone(),
        rows: Vec::new(),
        totals: Vec::new(),
        error: None,
    };
    if q.from.is_empty() || q.to.is_empty() {
        return render(StatusCode::OK, &page);
    }
    let period = (
        Timestamp::parse(&utc(&q.from)),
        Timestamp::parse(&utc(&q.to)),
    );
    let (Ok(from), Ok(to)) = period else {
        page.error = Some("choose both ends of the period".into());
        return render(StatusCode::UNPROCESSABLE_ENTITY, &page);
    };
    let app = console.app();
    let report = session.act(app, reports::RECONCILIATION, app.reconciliation(from, to));
    let report = report.await;
    if q.format == "csv" {
        if let Ok(r) = report {
            let name = format!("reconciliation-{}.csv", &q.from[..10.min(q.from.len())]);
            return attachment(csv_answer(r.to_csv()), &name);
        }
    }
    match report.map(Reconciliation::from) {
        Ok(r) => {
            let merchants = MerchantNames::load(&console, &session).await;
            page.rows = r
                .rows
                .iter()
                .map(|x| Row {
                    template: format!("{} #{}", x.title, x.template_id),
                    merchant: x
                        .merchant_id
                        .map(|m| merchants.one(m.get()))
                        .unwrap_or_else(|| "platform".into()),
                    funded_by: funded_by(&x.funded_by, x.funding.platform_bps()),
                    used: x.coupons_used,
                    discount: money(x.discount.minor()),
                    refunds: x.coupons_refunded,
                    refunded: money(x.refunded_discount.minor()),
                    net: money(x.net_discount),
                })
                .collect();
            let funders = [
                ("platform", &r.platform),
                ("merchants", &r.merchants),
                ("total", &r.total),
            ];
            page.totals = funders
                .iter()
                .map(|(k, t)| {
                    (
                        (*k).to_owned(),
                        t.coupons_used,
                        money(t.discount),
                        t.coupons_refunded,
                        money(t.refunded_discount),
                        money(t.net_discount),
                    )
                })
                .collect();
            render(StatusCode::OK, &page)
        }
        Err(p) => {
            page.error = Some(p.detail);
            render(
                StatusCode::from_u16(p.status).unwrap_or(StatusCode::BAD_REQUEST),
                &page,
            )
        }
    }
}
