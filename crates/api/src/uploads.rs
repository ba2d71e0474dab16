//! [`Uploads`]: the uploads being read, by the API or by the console's upload form (both take
//! their permit from the same [`crate::AppState`]), at most `max_concurrent_uploads` at once
//! and one at a time per caller (a principal's scope), so one tenant's slow uploads can hold
//! neither every permit nor a second one of its own.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The uploads being read, and the callers sending them.
#[derive(Debug)]
pub struct Uploads {
    permits: Arc<Semaphore>,
    // A std mutex: held only to update the set, never across an await.
    callers: Arc<Mutex<HashSet<String>>>,
}

/// The right to pass one upload on; dropping it frees the caller and the permit.
#[derive(Debug)]
pub struct UploadPermit {
    _permit: OwnedSemaphorePermit,
    who: String,
    callers: Arc<Mutex<HashSet<String>>>,
}

impl Uploads {
    /// At most `permits` at once (at least one).
    pub fn new(permits: usize) -> Self {
        Uploads {
            permits: Arc::new(Semaphore::new(permits.max(1))),
            callers: Arc::default(),
        }
    }

    /// A permit for `who`, if `who` has no upload being passed on and a permit is free.
    pub fn permit(&self, who: &str) -> Option<UploadPermit> {
        let mut callers = self.callers.lock().unwrap_or_else(PoisonError::into_inner);
        if callers.contains(who) {
            return None;
        }
        let permit = self.permits.clone().try_acquire_owned().ok()?;
        callers.insert(who.to_owned());
        Some(UploadPermit {
            _permit: permit,
            who: who.to_owned(),
            callers: self.callers.clone(),
        })
    }
}

impl Drop for UploadPermit {
    fn drop(&mut self) {
        self.callers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.who);
    }
}

#[cfg(test)]
mod tests {
    use super::Uploads;

    #[test]
    fn one_upload_per_caller_within_the_permits() {
        let uploads = Uploads::new(2);
        let a = uploads.permit("merchant:1").expect("free");
        assert!(
            uploads.permit("merchant:1").is_none(),
            "a second of its own"
        );
        let b = uploads.permit("merchant:2").expect("another caller");
        assert!(uploads.permit("platform").is_none(), "every permit held");
        drop(a);
        assert!(uploads.permit("merchant:1").is_some(), "freed");
        drop(b);
    }
}
