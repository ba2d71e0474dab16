//! `/v1/cities`: the platform's names for its cities. Every rule compares city ids; these
//! names are what pages and people read ("Lisbon (1)"). A city without a name is still a city.

use axum::extract::State;
use axum::Json;
use coupond_app::pages::PageRequest;
use coupond_domain::{City, CityDraft, CityId};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::pagination::PageOf;
use crate::routes::{BodyErrors, CommonErrors};
use crate::state::AppState;

/// Name a city.
///
/// Names a city (or renames it): its id is the platform's, as merchants, activities, templates,
/// listings and orders already use. Sending the name it has changes nothing. Recorded in the
/// audit trail as `city:<id>`.
#[utoipa::path(operation_id = "name_city", put, path = "/v1/cities/{id}", tag = "cities",
    request_body = CityDraft,
    params(("id" = i64, Path, description = "City id")),
    responses((status = 200, description = "The city, named", body = City), CommonErrors, BodyErrors),
    security(("bearer" = [])))]
pub async fn name(
    State(s): State<AppState>,
    ApiPath(id): ApiPath<CityId>,
    ApiJson(draft): ApiJson<CityDraft>,
) -> ApiResult<Json<City>> {
    Ok(Json(s.name_city(id, &draft).await?))
}

/// The page of a list of cities.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size, 1..=200 (default 50).
    pub limit: Option<u32>,
}

/// List named cities.
///
/// The cities the platform has named, by id, a page at a time.
#[utoipa::path(operation_id = "list_cities", get, path = "/v1/cities", tag = "cities",
    params(ListQuery),
    responses((status = 200, description = "A page of cities", body = PageOf<City>), CommonErrors),
    security(("bearer" = [])))]
pub async fn list(
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<PageOf<City>>> {
    let page = PageRequest {
        cursor: q.cursor,
        limit: q.limit,
    };
    Ok(Json(s.cities(page).await?))
}
