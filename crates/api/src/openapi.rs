//! The OpenAPI document, built from the handlers' annotations (each handler's doc comment:
//! a one-line summary, then its description) and completed by `catalogue`: who may call each
//! operation, its error codes, and a request and response example.

mod catalogue;

use catalogue::Catalogue;
pub use catalogue::{examples, Example, SceneCall, Sender};

use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

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
    tags(
        (name = "merchants", description = "Merchants (platform)"),
        (name = "cities", description = "The platform's names for its cities"),
        (name = "audit", description = "The audit trail (who changed what, with the fields before and after) and the self-audit's runs (the invariant checks, daily and on request)"),
        (name = "operators", description = "The people who sign into the console: platform staff, merchants' owners and staff"),
        (name = "activities", description = "Platform activities merchants enroll in"),
        (name = "templates", description = "Coupon templates"),
        (name = "claims", description = "Claiming coupons and reading wallets"),
        (name = "messages", description = "Email and SMS: users' contact points and choices, unsubscribe links, the message texts per locale, the delivery log, and campaign messages about a template to its holders or a segment"),
        (name = "centre", description = "The coupon centre: what a user may claim now, and templates and running activities as users see them"),
        (name = "rules", description = "Promotion rules: condition trees on the order, the customer and the clock, tried before they go on a template"),
        (name = "checkout", description = "Quotes and try/confirm/cancel of an order's coupons, and extending a lock (order service)"),
        (name = "issuances", description = "Bulk issuance of coupons to lists of users"),
        (name = "reports", description = "Statistics, the reconciliation, the campaign performance report and the settlement"),
        (name = "webhooks", description = "Signed event deliveries to your endpoints"),
        (name = "inbox", description = "A user's messages: coupons claimed, issued, expiring"),
        (name = "codes", description = "Promotion codes: shared codes, generated single-use codes, redemption"),
        (name = "listings", description = "Listings, their bound templates, and search by coupon"),
        (name = "coupons", description = "Revoking coupons and who holds a template's coupons"),
        (name = "tags", description = "User tags coupond holds, and when users were last seen, for segment issuance (platform, order service); private to the platform unless shared with merchants"),
        (name = "events", description = "The outbox as a replayable feed of events"),
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

/// Every write route takes `Idempotency-Key` (the claim and redemption routes document their
/// own, with what a retry returns), and with it may answer 409, 422 and 429 (keyed writes are
/// rate limited per user and merchant); documenting it here keeps the routes from repeating it.
struct IdempotencyDocs;

impl Modify for IdempotencyDocs {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
        use utoipa::openapi::{ContentBuilder, Ref, Required, ResponseBuilder};
        let problem = || {
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("Problem")))
                .build()
        };
        for (path, item) in doc.paths.paths.iter_mut() {
            // A route that changes nothing keeps no answer, so it takes no key (a quote ignores
            // one: declaring it would promise a check that is not made).
            let keyed = !crate::idempotency::SIDE_EFFECT_FREE.contains(&path.as_str());
            let writes = [
                item.post.as_mut(),
                item.put.as_mut(),
                item.patch.as_mut(),
                item.delete.as_mut(),
            ];
            for op in writes.into_iter().flatten() {
                let params = op.parameters.get_or_insert_with(Vec::new);
                if keyed && !params.iter().any(|p| p.name == "Idempotency-Key") {
                    params.push(
                        ParameterBuilder::new()
                            .name("Idempotency-Key")
                            .parameter_in(ParameterIn::Header)
                            .required(Required::False)
                            .description(Some(
                                "Makes retries safe: 1 to 255 visible ASCII characters. The \
                                 first answer is replayed for `idempotency_ttl` \
                                 (`idempotent-replayed: true`); the same key with another \
                                 request is 422 `idempotency_key_reused`, and while the first \
                                 runs, 409 `idempotency_in_flight`.",
                            ))
                            .schema(Some(
                                utoipa::openapi::ObjectBuilder::new()
                                    .schema_type(utoipa::openapi::schema::Type::String)
                                    .pattern(Some("^[\\x21-\\x7E]{1,255}$")),
                            ))
                            .build(),
                    );
                }
                for (status, what) in [
                    ("409", "A conflict with the current state, or a retry while the first request with its Idempotency-Key runs"),
                    ("422", "The body breaks a rule, or the Idempotency-Key was used for another request"),
                    ("429", "Over a rate limit (writes with an Idempotency-Key per user or merchant, among others); see Retry-After"),
                ] {
                    op.responses.responses.entry(status.to_owned()).or_insert_with(|| {
                        ResponseBuilder::new()
                            .description(what)
                            .content("application/problem+json", problem())
                            .build()
                            .into()
                    });
                }
            }
        }
    }
}

/// What the handlers enforce on parameters and responses, said in the document too (checked by
/// schemathesis: a request the document allows must not be refused as malformed):
/// - integer parameters are ids (at least 1), except `limit` (1..=200), `hours` (1..=2160)
///   and `days` (1..=90);
/// - `from` and `to` are RFC 3339 instants; order, user and code path parameters have patterns;
/// - the views that flatten a draft into the answer allow the answer's other fields (a draft
///   alone refuses unknown fields, which is right for requests only).
struct Constraints;

impl Modify for Constraints {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::schema::{KnownFormat, Schema, SchemaFormat, Type};
        use utoipa::openapi::RefOr;
        for item in doc.paths.paths.values_mut() {
            let ops = [
                item.get.as_mut(),
                item.post.as_mut(),
                item.put.as_mut(),
                item.patch.as_mut(),
                item.delete.as_mut(),
            ];
            for op in ops.into_iter().flatten() {
                for p in op.parameters.iter_mut().flatten() {
                    let Some(RefOr::T(Schema::Object(o))) = p.schema.as_mut() else {
                        continue;
                    };
                    let integer = matches!(
                        &o.schema_type,
                        utoipa::openapi::schema::SchemaType::Type(Type::Integer)
                    ) || matches!(&o.schema_type, utoipa::openapi::schema::SchemaType::Array(t) if t.contains(&Type::Integer));
                    match p.name.as_str() {
                        "limit" => {
                            o.minimum = Some(1.into());
                            o.maximum = Some(200.into());
                        }
                        "hours" => {
                            o.minimum = Some(1.into());
                            o.maximum = Some(2160.into());
                        }
                        "days" => {
                            o.minimum = Some(1.into());
                            o.maximum = Some(90.into());
                        }
                        "from" | "to" => {
                            o.format = Some(SchemaFormat::KnownFormat(KnownFormat::DateTime));
                        }
                        "order_id" => o.pattern = Some("^[A-Za-z0-9_.:-]{1,128}$".into()),
                        "code" => o.pattern = Some("^[A-Za-z0-9 -]{4,60}$".into()),
                        "id" if !integer => o.pattern = Some("^[A-Za-z0-9_.:@-]{1,64}$".into()),
                        _ if integer => o.minimum = Some(1.into()),
                        _ => {}
                    }
                }
            }
        }
        let Some(components) = doc.components.as_mut() else {
            return;
        };
        // Views (and the pages of views) are `allOf: [Draft, extra fields]`; the walk is done
        // on JSON because those compositions also appear inline, nested inside other schemas.
        let Ok(mut schemas) = serde_json::to_value(&components.schemas) else {
            return;
        };
        let drafts: Vec<(String, serde_json::Value)> = schemas
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(name, _)| name.ends_with("Draft"))
            .map(|(name, s)| {
                let mut open = s.clone();
                if let Some(o) = open.as_object_mut() {
                    o.remove("additionalProperties");
                }
                (format!("#/components/schemas/{name}"), open)
            })
            .collect();
        open_drafts_in_all_of(&mut schemas, &drafts);
        if let Ok(opened) = serde_json::from_value(schemas) {
            components.schemas = opened;
        }
    }
}

/// Replaces each `$ref` to a draft that sits directly in an `allOf` with an open copy.
fn open_drafts_in_all_of(value: &mut serde_json::Value, drafts: &[(String, serde_json::Value)]) {
    match value {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::Array(items)) = map.get_mut("allOf") {
                for item in items.iter_mut() {
                    let target = item.get("$ref").and_then(|r| r.as_str());
                    if let Some((_, open)) =
                        drafts.iter().find(|(loc, _)| Some(loc.as_str()) == target)
                    {
                        *item = open.clone();
                    }
                }
            }
            for v in map.values_mut() {
                open_drafts_in_all_of(v, drafts);
            }
        }
        serde_json::Value::Array(items) => {
            for v in items {
                open_drafts_in_all_of(v, drafts);
            }
        }
        _ => {}
    }
}

/// The document, built once: the annotations are fixed, and the catalogue's examples are
/// parsed and attached the first time it is asked for, not on every `GET /openapi.json`.
pub fn document() -> &'static utoipa::openapi::OpenApi {
    static DOC: std::sync::OnceLock<utoipa::openapi::OpenApi> = std::sync::OnceLock::new();
    DOC.get_or_init(|| {
        // The info and tags from the derive; every path and schema from the routes as declared
        // (`routes::table`); then what the modifiers add to each operation.
        let mut doc = ApiDoc::openapi();
        doc.merge(crate::routes::documented());
        let modifiers: [&dyn Modify; 4] = [&BearerAuth, &IdempotencyDocs, &Constraints, &Catalogue];
        for m in modifiers {
            m.modify(&mut doc);
        }
        doc
    })
}

/// The document as pretty-printed JSON.
pub fn document_json() -> String {
    document()
        .to_pretty_json()
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}
