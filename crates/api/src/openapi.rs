//! The OpenAPI document, built from the handlers' annotations.

use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::routes::{activities, claims, listings, merchants, system, templates};

/// The whole API, served at `/openapi.json`.
#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "coupond",
        description = "Coupon and promotion engine for marketplaces. Money is integer minor units, \
            percentages are basis points, times are RFC 3339 UTC. Errors are application/problem+json \
            with a stable `code`.",
        license(name = "Apache-2.0")
    ),
    paths(
        merchants::create, merchants::get,
        activities::create, activities::list, activities::get, activities::update, activities::abort,
        templates::create, templates::list, templates::get, templates::update, templates::publish,
        templates::abort,
        listings::create, listings::list, listings::get, listings::update, listings::bind,
        listings::unbind,
        claims::claim, claims::mine, claims::of_user,
        system::healthz, system::readyz, system::metrics, system::openapi, system::docs,
    ),
    modifiers(&BearerAuth),
    tags(
        (name = "merchants", description = "Merchants (platform)"),
        (name = "activities", description = "Platform activities merchants enroll in"),
        (name = "templates", description = "Coupon templates"),
        (name = "claims", description = "Claiming coupons and reading wallets"),
        (name = "listings", description = "Listings, their bound templates, and search by coupon"),
        (name = "system", description = "Health, metrics and this document"),
    )
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        let mut scheme = Http::new(HttpAuthScheme::Bearer);
        scheme.description = Some(
            "An API key (`cpd_...`, roles platform, merchant, service) or a user JWT (HS256, sub = user id)."
                .into(),
        );
        components.add_security_scheme("bearer", SecurityScheme::Http(scheme));
    }
}

/// The document as pretty-printed JSON.
pub fn document_json() -> String {
    ApiDoc::openapi()
        .to_pretty_json()
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}
