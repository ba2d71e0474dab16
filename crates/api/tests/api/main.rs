//! API integration tests: the whole router, in-process, each test on a fresh database with a
//! manual clock.
#![allow(clippy::unwrap_used)]

mod claims;
mod clock;
mod flows;
mod isolation;
mod listings;
mod openapi;
mod roles;
mod support;
mod validation;
