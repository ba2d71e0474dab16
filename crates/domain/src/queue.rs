//! How much background work one owner (a merchant, or the platform) may have waiting: code
//! batches not yet generated and issuance jobs not yet issued are capped per owner, so one
//! owner's huge queue cannot hold everyone else's small jobs for long.

use crate::error::DomainError;

/// Whether `asked` more `what` (`"codes"`, `"users"`) may join the `queued` ones an owner
/// already has waiting, under the cap `max`; past it, `queue_full` (a state: retry later).
pub fn check_queue(what: &str, queued: i64, asked: i64, max: i64) -> Result<(), DomainError> {
    if queued.saturating_add(asked) <= max {
        return Ok(());
    }
    Err(DomainError::state(
        "queue_full",
        format!(
            "{queued} {what} are already waiting and {asked} more would pass the {max} one \
             owner may have queued; retry when earlier ones have finished"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_counts_what_waits_and_what_is_asked() {
        assert!(check_queue("codes", 0, 10, 10).is_ok());
        assert!(check_queue("codes", 4, 6, 10).is_ok());
        let full = check_queue("codes", 5, 6, 10).unwrap_err();
        assert_eq!(full.code, "queue_full");
        assert!(full
            .message
            .contains("5 codes are already waiting and 6 more"));
        // No overflow, whatever the counts.
        assert!(check_queue("users", i64::MAX, i64::MAX, 100).is_err());
    }
}
