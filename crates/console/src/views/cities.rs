//! Cities by name: the platform's list (its admins name and rename cities here), and
//! [`CityNames`], which every page showing cities uses to say "Lisbon (1)" rather than "1".

use std::collections::BTreeMap;

use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use coupond_domain::{City, CityId};
use serde::Deserialize;
use serde_json::json;

use super::paging::gather;
use super::{guard, problem_page, render, FieldErrors, Shell, Shown};
use crate::session::Session;
use crate::Console;

/// The names of the platform's cities, read once per page.
#[derive(Clone, Debug, Default)]
pub struct CityNames(BTreeMap<i64, String>);

impl CityNames {
    /// Every named city (a page without them still shows ids: names are a help, not a rule).
    pub async fn load(console: &Console, session: &Session) -> CityNames {
        let cities = gather(console, session, "/v1/cities")
            .await
            .and_then(|g| g.typed::<City>())
            .unwrap_or_default();
        CityNames(cities.into_iter().map(|c| (c.id.get(), c.name)).collect())
    }

    /// One city: "Lisbon (1)", or "city 7" when it has no name.
    pub fn one(&self, id: i64) -> String {
        match self.0.get(&id) {
            Some(name) => format!("{name} ({id})"),
            None => format!("city {id}"),
        }
    }

    /// Several cities, in order, separated by commas.
    pub fn list(&self, ids: impl IntoIterator<Item = CityId>) -> String {
        let named: Vec<String> = ids.into_iter().map(|c| self.one(c.get())).collect();
        named.join(", ")
    }

    /// What a form's cities field says it takes: the ids, and the named cities to pick from.
    pub fn hint(&self) -> String {
        if self.0.is_empty() {
            return "City ids, separated by commas".to_owned();
        }
        let known: Vec<String> = self.0.iter().map(|(id, n)| format!("{id} {n}")).collect();
        format!("City ids, separated by commas: {}", known.join(", "))
    }
}

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
    let cities = match gather(console, session, "/v1/cities")
        .await
        .and_then(|g| g.typed::<City>())
    {
        Ok(c) => c,
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

/// Names (or renames) a city through `PUT /v1/cities/{id}`.
pub async fn name(
    State(console): State<Console>,
    session: Session,
    headers: HeaderMap,
    Form(form): Form<CityForm>,
) -> Response {
    if let Some(refused) = guard(&headers, &session, &form.csrf) {
        return refused;
    }
    let id = match form.id.trim().parse::<i64>() {
        Ok(id) if id > 0 => id,
        _ => {
            let shown = Shown::field("id", "a city id is a whole number from 1".into());
            return page(&console, &session, form, shown).await;
        }
    };
    let reply = console
        .api()
        .send_json(
            &session.caller,
            Method::PUT,
            &format!("/v1/cities/{id}"),
            &json!({"name": form.name}),
        )
        .await;
    match reply.into::<City>() {
        Ok(_) => Redirect::to("/console/cities").into_response(),
        Err(p) => page(&console, &session, form, Shown::of(&p)).await,
    }
}
