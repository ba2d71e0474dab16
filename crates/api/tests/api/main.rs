//! API integration tests: the whole router, in-process, each test on a fresh database with a
//! manual clock.
#![allow(clippy::unwrap_used)]

mod abuse;
mod actions;
mod approval;
mod audit;
mod backends;
mod centre;
mod centre_views;
mod checkout;
mod checkout_guards;
mod checkout_races;
mod claims;
mod clock;
mod codes;
mod event_order;
mod examples;
mod feeds;
mod flows;
mod hostile;
mod instances;
mod isolation;
mod issuances;
mod lifecycle;
mod listings;
mod lock_deadlines;
mod merchants;
mod model;
mod openapi;
mod operator_roles;
mod operators;
mod queues;
mod references;
mod reports;
mod roles;
mod scheduling;
mod segments;
mod self_audit;
mod shared_tags;
mod standing;
mod steering;
mod support;
mod validation;
mod webhook_actions;
mod webhooks;
