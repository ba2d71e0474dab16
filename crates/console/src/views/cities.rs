//! Cities by name: the platform's list, where its admins name and rename cities (pages show
//! them through [`super::names::CityNames`]).

use askama::Template;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use coupond_app::merchants;
use coupond_domain::{CityDraft, CityId};
use serde::Deserialize;

use super::paging::gather_all;
use super::{guard, problem_page, render, FieldErrors, Shell, Shown};
use crate::session::Session;
use crate::Console;

/// The form naming a city.
#[derive(Debug, Default, Deserialize)]
pub struct CityForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    id: String,
    #[serde(default)]
    name: String,
}

#[derive(Template)]
#[template(path = "cities.html")]
struct CitiesPage {
    shell: Shell,
    cities: Vec<(i64, String)>,
    form: CityForm,
    errors: FieldErrors,
    error: Option<String>,
}

async fn page(console: &Console, session: &Session, form: CityForm, shown: Shown) -> Response {
    let app = console.app();
    let read = |page| async move {
        let cities = app.cities(page);
        session.act(app, merchants::CITIES, cities).await
    };
    let cities = match gather_all(console, read).await {
        Ok(c) => c.items,
        Err(p) => return problem_page(session, &p),
    };
    let page = CitiesPage {
        shell: Shell::new(session, "Cities"),
        cities: cities.into_iter().map(|c| (c.id.get(), c.name)).collect(),
        form,
        errors: shown.errors,
        error: shown.error,
    };
    render(shown.status, &page)
}

pub async fn list(State(console): State<Console>, session: Session) -> Response {
    page(&console, &session, CityForm::default(), Shown::ok()).await
}

/// Names (or renames) a city.
pub async fn name(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Form(form): Form<CityForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &form.csrf) {
        return refused;
    }
    let id = match form.id.trim().parse::<i64>().map(CityId::new) {
        Ok(Ok(id)) => id,
        _ => {
            let shown = Shown::field("id", "a city id is a whole number from 1".into());
            return page(&console, &session, form, shown).await;
        }
    };
    let app = console.app();
    let draft = CityDraft {
        name: form.name.clone(),
    };
    let named = session.act(app, merchants::MANAGE, app.name_city(id, &draft));
    match named.await {
        Ok(_) => Redirect::to("/console/cities").into_response(),
        Err(p) => page(&console, &session, form, Shown::of(&p)).await,
    }
}
