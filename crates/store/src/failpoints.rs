//! Named fault-injection points, for the failpoint matrix (crates/coupond/tests/cli/
//! failpoints.rs).
//!
//! A point is a call to [`hit`] at a place where a crash or an error matters: inside a
//! transaction before its commit, between a batch's statements, after a commit but before the
//! caller is answered. Only builds with the `failpoints` feature (test builds: the `coupond`
//! crate's dev-dependency turns it on) evaluate them, through the `fail` crate; in every other
//! build [`hit`] is an inlined `Ok(())`.
//!
//! `serve` reads `COUPOND_FAILPOINTS` once at start ([`configure`]): `name=action;...` with
//! the `fail` crate's actions. Two are used: `return` makes the point fail the operation with
//! [`crate::StoreError::Other`] (what a lost connection or a full disk looks like to the
//! caller), and `return(abort)` aborts the process on the spot, as kill -9 would; `1*` in
//! front fires once.

use crate::StoreResult;

/// The points, by name; the failpoint matrix drives each one.
pub const POINTS: [&str; 10] = [
    // Claims: between the coupon rows and the stock update (the claim code bulk issuance
    // chunks share, so it fires there too); the stock taken (on PostgreSQL and MySQL from a shard, the
    // sold-out event written where it was the last), not committed; just before the commit
    // (all in the store); after the commit, before the callers are answered (engine).
    "claim.mid_batch",
    "claim.stock_taken",
    "claim.before_commit",
    "claim.after_commit",
    // Checkout confirm: before the store commits it; after, before the answer.
    "confirm.before_commit",
    "confirm.after_commit",
    // Bulk issuance: a chunk's coupons written, its progress not yet; after a chunk's commit.
    "issuance.mid_chunk",
    "issuance.after_chunk",
    // The lock sweeper, when it ends at least one lock: before its transaction commits; after.
    "sweeper.before_commit",
    "sweeper.after_commit",
];

/// Points outside the database's transactions, driven by their own tests (the matrix runs
/// without a broker): the NATS publisher after JetStream acknowledged a batch, before its
/// position moved (crates/coupond/tests/cli/brokers.rs).
pub const BROKER_POINTS: [&str; 1] = ["nats.after_ack"];

fn known(name: &str) -> bool {
    POINTS.contains(&name) || BROKER_POINTS.contains(&name)
}

/// Whether this build evaluates failpoints.
pub const ENABLED: bool = cfg!(feature = "failpoints");

/// The failpoint `name`: `Ok(())` unless a test configured it.
#[inline]
pub fn hit(name: &str) -> StoreResult<()> {
    #[cfg(feature = "failpoints")]
    {
        debug_assert!(known(name), "unknown failpoint {name}");
        let fired = fail::eval(name, |arg| {
            if arg.as_deref() == Some("abort") {
                std::process::abort();
            }
        });
        if fired.is_some() {
            return Err(crate::StoreError::other(format!("failpoint {name}")));
        }
    }
    #[cfg(not(feature = "failpoints"))]
    let _ = name;
    Ok(())
}

/// Configures the points from `spec` (`name=action;name=action`, the value of
/// `COUPOND_FAILPOINTS`). An error names what could not be read; a build without failpoints
/// refuses any spec, so a fault test cannot pass by injecting nothing.
pub fn configure(spec: &str) -> Result<(), String> {
    for part in spec.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, action) = part
            .split_once('=')
            .ok_or_else(|| format!("failpoint `{part}`: expected name=action"))?;
        let name = name.trim();
        if !known(name) {
            return Err(format!("unknown failpoint `{name}`"));
        }
        if !ENABLED {
            return Err("this build has no failpoints (feature `failpoints` is off)".into());
        }
        #[cfg(feature = "failpoints")]
        fail::cfg(name, action.trim())?;
        #[cfg(not(feature = "failpoints"))]
        let _ = action;
    }
    Ok(())
}
