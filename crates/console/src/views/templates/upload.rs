//! Bulk issuance by file upload, and its live progress. An upload form is read in order, and
//! no byte of its file before the caller is known to be allowed it: the form token (the first
//! part), then the template as the caller's key sees it (another merchant's is a 404), then a
//! permit (at most one upload at a time per caller); only then is the file streamed to the
//! API's upload reader (the same one `POST /v1/templates/{id}/issuances` reads with), a chunk
//! at a time, never held whole.

use askama::Template;
use axum::body::{Body, Bytes};
use axum::extract::multipart::{Field, MultipartError};
use axum::extract::{Multipart, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use coupond_api::routes::issuances::{issue_upload, IssuanceView};
use coupond_app::identify::Origin;
use coupond_app::records::Issuance;
use coupond_app::{issuance, AppError};
use coupond_domain::TemplateId;
use tokio::sync::mpsc;

use super::super::{guard, problem_page, render, TemplateRow};
use super::Job;
use crate::problem::Problem;
use crate::session::Session;
use crate::Console;

/// The longest form token read (a token is 43 characters).
const MAX_TOKEN_BYTES: usize = 256;

/// A file of user ids (the `csrf` part first, then `file`): sent to the API as the upload
/// it is, streamed; answered with the progress partial, which polls until the job is done. A
/// form whose first part is not this session's token is refused (403) with nothing else
/// read; so is an upload to a template the caller cannot see (404), or a second upload while
/// the caller's first is still being passed on.
pub async fn upload(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<i64>,
    mut form: Multipart,
) -> Response {
    let limit = console.app().settings().max_upload_bytes;
    // The API's own upload permit, held until the job is stored: one upload per caller is read
    // at a time, through either door. Taken before anything of the body is read, so that a
    // second upload of the caller's is turned away whatever stage its first is at (a forged
    // or foreign form lets it go at once).
    let Some(_permit) = console.upload_permit(&session.principal.scope()) else {
        return progress_error(&Problem {
            fields: Vec::new(),
            status: 429,
            code: "too_many_uploads".into(),
            field: Some("file".into()),
            detail: "an upload of yours is still being read, or others are; try again in a \
                     moment"
                .into(),
        });
    };
    let csrf = match first_token(&mut form).await {
        Ok(csrf) => csrf,
        Err(e) => return progress_error(&unreadable(&e, limit)),
    };
    if let Some(refused) = guard(&headers, &session, &csrf) {
        return refused;
    }
    let app = console.app();
    let template = match TemplateId::new(id) {
        Ok(t) => app.issuable_template(&session.principal, t),
        Err(_) => return problem_page(&session, &Problem::from(AppError::NotFound)),
    };
    let template = match session.act(app, issuance::START, template).await {
        Ok(t) => t,
        Err(p) if p.status == 404 => return problem_page(&session, &p),
        Err(p) => return progress_error(&p),
    };
    let field = match form.next_field().await {
        Ok(Some(f)) if f.name() == Some("file") => f,
        Ok(_) => return progress_error(&no_file()),
        Err(e) => return progress_error(&unreadable(&e, limit)),
    };
    match pass_on(&console, &session, template, field, limit).await {
        Ok(job) => {
            let j = IssuanceView::new(job, app.now());
            render(StatusCode::OK, &Progress::of(&console, &session, &j).await)
        }
        Err(p) => progress_error(&p),
    }
}

/// The form token, if it is the form's first part (and no longer than a token); otherwise an
/// empty string, which no session has. A body over the limit from its first bytes is that
/// error (answered in words, nothing else read).
async fn first_token(form: &mut Multipart) -> Result<String, MultipartError> {
    let mut field = match form.next_field().await {
        Ok(Some(field)) if field.name() == Some("csrf") => field,
        Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => return Err(e),
        _ => return Ok(String::new()),
    };
    let mut token = Vec::new();
    loop {
        match field.chunk().await {
            Ok(Some(chunk)) if token.len() + chunk.len() <= MAX_TOKEN_BYTES => {
                token.extend_from_slice(&chunk)
            }
            Ok(None) => return Ok(String::from_utf8(token).unwrap_or_default()),
            Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => return Err(e),
            Ok(Some(_)) | Err(_) => return Ok(String::new()),
        }
    }
}

/// The file part streamed to `POST /v1/templates/{id}/issuances` as `text/csv`, a chunk at a
/// time as it arrives (at most two chunks waiting); a file that cannot be read (over the
/// limit, cut short) is that problem, whatever the API made of its truncated body.
async fn pass_on(
    console: &Console,
    session: &Session,
    template: coupond_domain::Template,
    mut field: Field<'_>,
    limit: usize,
) -> Result<Issuance, Problem> {
    let mut next = loop {
        match field.chunk().await {
            Ok(Some(c)) if c.is_empty() => continue,
            Ok(Some(c)) => break Some(c),
            Ok(None) => return Err(no_file()),
            Err(e) => return Err(unreadable(&e, limit)),
        }
    };
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(2);
    let pump = async move {
        while let Some(chunk) = next {
            if tx.send(Ok(chunk)).await.is_err() {
                return None; // the API answered without the rest
            }
            next = match field.chunk().await {
                Ok(c) => c,
                Err(e) => {
                    let cut = std::io::Error::other("the upload could not be read");
                    let _ = tx.send(Err(cut)).await;
                    return Some(e);
                }
            };
        }
        None
    };
    let body = Body::from_stream(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    }));
    let app = console.app();
    let who = session.identity.who.clone();
    let issue = issue_upload(app, &session.principal, template, body);
    let call = app.as_caller(who, Origin::default(), issue);
    tokio::pin!(call, pump);
    tokio::select! {
        biased;
        failed = &mut pump => {
            let answered = call.await;
            match failed {
                Some(e) => Err(unreadable(&e, limit)),
                None => answered.map_err(Problem::from),
            }
        }
        // Answered before the whole file was sent (a refusal): the rest is not read.
        answered = &mut call => answered.map_err(Problem::from),
    }
}

fn no_file() -> Problem {
    Problem {
        fields: Vec::new(),
        status: 422,
        code: "no_file".into(),
        field: Some("file".into()),
        detail: "choose a file of user ids".into(),
    }
}

/// A body over the route's limit, or one that cannot be read, as a problem naming the file.
fn unreadable(e: &MultipartError, limit: usize) -> Problem {
    Problem {
        fields: Vec::new(),
        status: e.status().as_u16(),
        code: "upload_unreadable".into(),
        field: Some("file".into()),
        detail: if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            format!("the file is too large: uploads take at most {limit} bytes")
        } else {
            format!("the upload could not be read ({})", e.body_text())
        },
    }
}

/// A job's progress as the upload's answer and each poll show it; once the job is done, also
/// its template's claimed / stock figure, swapped in out of band where the template's page
/// shows it, so the page is current without a reload.
#[derive(Template)]
#[template(path = "partials/progress_poll.html")]
struct Progress {
    job: Job,
    /// The template's row after the job, when it is done (and readable).
    after: Option<TemplateRow>,
}

impl Progress {
    /// The progress of `j`, read as `session`: with the template's figures once it is done.
    async fn of(console: &Console, session: &Session, j: &IssuanceView) -> Self {
        let job = Job::of(j);
        let after = if job.done {
            super::read(console, session, job.template)
                .await
                .ok()
                .map(|t| TemplateRow::of(&t))
        } else {
            None
        };
        Progress { job, after }
    }
}

#[derive(Template)]
#[template(path = "partials/upload_error.html")]
struct UploadError {
    detail: String,
}

fn progress_error(p: &Problem) -> Response {
    // 200 so htmx swaps it in where the progress would be.
    render(
        StatusCode::OK,
        &UploadError {
            detail: p.detail.clone(),
        },
    )
}

/// The progress partial of job `id`, polled by htmx until the job is done.
pub async fn progress(
    State(console): State<Console>,
    session: Session,
    Path(id): Path<i64>,
) -> Response {
    let app = console.app();
    let job = app.issuance(&session.principal, id);
    let job = session.act(app, issuance::READ, job).await;
    match job.map(|j| IssuanceView::new(j, app.now())) {
        Ok(j) => render(StatusCode::OK, &Progress::of(&console, &session, &j).await),
        Err(p) if p.status == 404 => problem_page(&session, &p),
        Err(p) => progress_error(&p),
    }
}
