//! Every route, declared once: the roles it admits and its handler, whose path and method
//! come from the handler's `#[utoipa::path]` (utoipa-axum's `routes!`). The router, the
//! role guard, the idempotency layer and the OpenAPI document are all built from this list.

use utoipa_axum::router::UtoipaMethodRouter;
use utoipa_axum::routes;

use super::{
    activities, audit, audits, campaign_messages, centre, checkout, cities, claims, codes,
    contacts, coupons, events, inbox, issuances, keys, listings, merchants, message_texts,
    named_rules, op, operators, performance, plain_orders, refunds, reports, route, rules, seen,
    settlement, shared_tags, steering, system, tag_uploads, tags, templates, today, upload,
    webhooks, Declared, PLATFORM_SERVICE, SERVICE, USER, USER_SERVICE,
};
use crate::state::AppState;

/// The `/v1` routes, each behind its role guard.
pub(super) fn declared() -> Vec<Declared> {
    [
        merchant_and_activity_routes(),
        template_routes(),
        wallet_routes(),
        operations_routes(),
        checkout_routes(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The routes that need no credentials and are documented: health, readiness, metrics, the
/// document itself and its browser, and an email's unsubscribe link (the signed token is the
/// permission).
pub(crate) fn open() -> Vec<UtoipaMethodRouter<AppState>> {
    vec![
        routes!(system::healthz),
        routes!(system::readyz),
        routes!(system::metrics),
        routes!(system::openapi),
        routes!(system::docs),
        routes!(contacts::unsubscribe_page, contacts::unsubscribe),
    ]
}

/// Merchants and activities.
fn merchant_and_activity_routes() -> Vec<Declared> {
    vec![
        op(coupond_app::merchants::MANAGE, routes!(merchants::create)),
        op(coupond_app::merchants::LIST, routes!(merchants::list)),
        op(coupond_app::merchants::CITIES, routes!(cities::list)),
        op(coupond_app::merchants::MANAGE, routes!(cities::name)),
        op(coupond_app::merchants::READ, routes!(merchants::get)),
        op(coupond_app::merchants::MANAGE, routes!(merchants::update)),
        op(coupond_app::keys::MANAGE, routes!(keys::create)),
        op(coupond_app::keys::MANAGE, routes!(keys::list)),
        op(coupond_app::keys::MANAGE, routes!(keys::revoke)),
        op(coupond_app::keys::REASSIGN, routes!(keys::reassign)),
        op(coupond_app::people::MANAGE, routes!(operators::list)),
        op(coupond_app::people::MANAGE, routes!(operators::create)),
        op(coupond_app::people::MANAGE, routes!(operators::invitations)),
        op(coupond_app::people::MANAGE, routes!(operators::update)),
        op(coupond_app::audit_trail::READ, routes!(audit::list)),
        op(coupond_app::audits::READ, routes!(audits::list)),
        op(coupond_app::audits::RUN, routes!(audits::run)),
        op(coupond_app::activities::EDIT, routes!(activities::create)),
        op(coupond_app::activities::READ, routes!(activities::list)),
        op(coupond_app::activities::READ, routes!(activities::get)),
        op(coupond_app::activities::EDIT, routes!(activities::update)),
        op(coupond_app::activities::EDIT, routes!(activities::abort)),
        op(
            coupond_app::activities::EDIT,
            routes!(steering::pause_activity),
        ),
        op(
            coupond_app::activities::EDIT,
            routes!(steering::resume_activity),
        ),
    ]
}

/// Templates and listings with their bindings.
fn template_routes() -> Vec<Declared> {
    vec![
        op(coupond_app::templates::EDIT, routes!(templates::create)),
        op(coupond_app::templates::READ, routes!(templates::list)),
        op(coupond_app::templates::READ, routes!(templates::get)),
        op(coupond_app::templates::EDIT, routes!(templates::update)),
        op(coupond_app::templates::EDIT, routes!(templates::remove)),
        op(coupond_app::templates::READ, routes!(templates::history)),
        op(coupond_app::coupons::HOLDERS, routes!(coupons::of_template)),
        op(coupond_app::templates::EDIT, routes!(templates::publish)),
        op(coupond_app::templates::EDIT, routes!(templates::abort)),
        op(
            coupond_app::templates::EDIT,
            routes!(steering::pause_template),
        ),
        op(
            coupond_app::templates::EDIT,
            routes!(steering::resume_template),
        ),
        op(
            coupond_app::templates::EDIT,
            routes!(steering::stop_template),
        ),
        op(coupond_app::steering::REVIEW, routes!(templates::approve)),
        op(coupond_app::steering::REVIEW, routes!(templates::reject)),
        op(coupond_app::listings::EDIT, routes!(listings::create)),
        op(coupond_app::listings::READ, routes!(listings::list)),
        op(coupond_app::listings::READ, routes!(listings::get)),
        op(coupond_app::listings::EDIT, routes!(listings::update)),
        op(coupond_app::listings::EDIT, routes!(listings::remove)),
        op(coupond_app::listings::BIND, routes!(listings::bind)),
        op(coupond_app::listings::BIND, routes!(listings::unbind)),
    ]
}

/// Claims, a user's wallet, inbox and coupon centre, promotion codes.
fn wallet_routes() -> Vec<Declared> {
    vec![
        route(USER_SERVICE, routes!(claims::claim)),
        op(coupond_app::users::OWN_WALLET, routes!(claims::mine)),
        route(USER, routes!(centre::mine)),
        route(USER, routes!(centre::template)),
        route(USER, routes!(centre::activity)),
        op(coupond_app::inbox::READ, routes!(inbox::list)),
        op(coupond_app::inbox::MARK, routes!(inbox::read)),
        op(coupond_app::codes::MANAGE, routes!(codes::set_shared)),
        op(coupond_app::codes::READ, routes!(codes::get_shared)),
        op(coupond_app::codes::MANAGE, routes!(codes::remove_shared)),
        op(coupond_app::codes::MANAGE, routes!(codes::create_batch)),
        op(coupond_app::codes::READ, routes!(codes::list_batches)),
        op(coupond_app::codes::READ, routes!(codes::get_batch)),
        op(coupond_app::codes::READ, routes!(codes::download)),
        route(USER_SERVICE, routes!(codes::redeem)),
    ]
}

/// Bulk issuance, stats, reconciliation and webhooks.
fn operations_routes() -> Vec<Declared> {
    vec![
        upload(
            coupond_app::issuance::START.roles,
            routes!(issuances::create),
        ),
        op(coupond_app::issuance::READ, routes!(issuances::list)),
        op(coupond_app::issuance::READ, routes!(issuances::get)),
        op(coupond_app::reports::FIGURES, routes!(reports::template)),
        op(coupond_app::reports::FIGURES, routes!(reports::activity)),
        op(
            coupond_app::reports::RECONCILIATION,
            routes!(reports::reconciliation),
        ),
        op(
            coupond_app::reports::FIGURES,
            routes!(performance::performance),
        ),
        op(
            coupond_app::reports::FIGURES,
            routes!(settlement::settlement),
        ),
        op(coupond_app::today::READ, routes!(today::today)),
        op(coupond_app::webhooks::MANAGE, routes!(webhooks::create)),
        op(coupond_app::webhooks::READ, routes!(webhooks::list)),
        op(coupond_app::webhooks::READ, routes!(webhooks::get)),
        op(coupond_app::webhooks::MANAGE, routes!(webhooks::remove)),
        op(coupond_app::webhooks::MANAGE, routes!(webhooks::disable)),
        op(coupond_app::webhooks::MANAGE, routes!(webhooks::ping)),
        op(coupond_app::webhooks::READ, routes!(webhooks::deliveries)),
        op(coupond_app::events::READ, routes!(events::list)),
    ]
}

/// The order service's checkout and the coupon lookups around it.
fn checkout_routes() -> Vec<Declared> {
    vec![
        route(USER_SERVICE, routes!(checkout::quote)),
        op(coupond_app::rules::TRY, routes!(rules::preview)),
        op(
            coupond_app::named_rules::WRITE,
            routes!(named_rules::create),
        ),
        op(coupond_app::named_rules::READ, routes!(named_rules::list)),
        op(coupond_app::named_rules::READ, routes!(named_rules::get)),
        op(
            coupond_app::named_rules::WRITE,
            routes!(named_rules::update),
        ),
        op(
            coupond_app::named_rules::WRITE,
            routes!(named_rules::remove),
        ),
        route(SERVICE, routes!(checkout::lock)),
        // The order service, and the platform's support (the console's "extend").
        op(coupond_app::orders::EXTEND, routes!(checkout::extend)),
        route(SERVICE, routes!(checkout::confirm)),
        route(SERVICE, routes!(checkout::cancel)),
        // An order paid without a coupon, for the performance report's comparison.
        route(SERVICE, routes!(plain_orders::record)),
        route(SERVICE, routes!(refunds::refund)),
        route(SERVICE, routes!(checkout::get)),
        op(coupond_app::coupons::REVOKE, routes!(coupons::revoke)),
        op(coupond_app::coupons::HISTORY, routes!(checkout::history)),
        op(coupond_app::users::WALLET, routes!(claims::of_user)),
        op(coupond_app::centre::FOR_USER, routes!(centre::of_user)),
        op(coupond_app::users::PROFILE_WRITE, routes!(tags::put)),
        op(coupond_app::users::PROFILE, routes!(tags::get)),
        op(coupond_app::users::PROFILE_WRITE, routes!(seen::mark)),
        op(coupond_app::users::PROFILE, routes!(seen::get)),
        upload(PLATFORM_SERVICE, routes!(tag_uploads::create)),
        op(coupond_app::users::PROFILE, routes!(tag_uploads::list)),
        op(coupond_app::users::PROFILE, routes!(tag_uploads::get)),
        op(coupond_app::contacts::WRITE, routes!(contacts::put_contact)),
        op(coupond_app::contacts::READ, routes!(contacts::get_contact)),
        op(
            coupond_app::contacts::WRITE,
            routes!(contacts::put_preferences),
        ),
        op(
            coupond_app::contacts::OWN_READ,
            routes!(contacts::my_preferences),
        ),
        op(
            coupond_app::contacts::OWN_WRITE,
            routes!(contacts::put_my_preferences),
        ),
        op(
            coupond_app::message_texts::READ,
            routes!(message_texts::list),
        ),
        op(
            coupond_app::message_texts::EDIT,
            routes!(message_texts::put),
        ),
        op(
            coupond_app::message_texts::EDIT,
            routes!(message_texts::delete),
        ),
        op(
            coupond_app::message_texts::EDIT,
            routes!(message_texts::preview),
        ),
        op(
            coupond_app::messages::SEND,
            routes!(campaign_messages::send),
        ),
        op(
            coupond_app::messages::READ,
            routes!(campaign_messages::list),
        ),
        op(
            coupond_app::message_texts::READ,
            routes!(message_texts::outbound),
        ),
        op(coupond_app::shared_tags::READ, routes!(shared_tags::list)),
        op(
            coupond_app::shared_tags::MANAGE,
            routes!(shared_tags::share),
        ),
        op(
            coupond_app::shared_tags::MANAGE,
            routes!(shared_tags::unshare),
        ),
    ]
}
