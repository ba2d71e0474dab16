//! What the chunked background jobs (bulk issuance, bulk tags) share: [`Lists`], the cache of
//! each open job's item list, so the list is read from the database once per job and process,
//! not once per chunk.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use coupond_store::StoreResult;

/// Each open job's items, by job id. Cheap to clone; clones share the cache.
///
/// Lock: a `std` mutex, held only to look up, insert or remove, never across an await. Two
/// tasks that miss at once both read the list; the second insert replaces an equal list.
#[derive(Debug)]
pub struct Lists<T> {
    lists: Arc<Mutex<HashMap<i64, Arc<Vec<T>>>>>,
}

impl<T> Clone for Lists<T> {
    fn clone(&self) -> Self {
        Lists {
            lists: self.lists.clone(),
        }
    }
}

impl<T> Default for Lists<T> {
    fn default() -> Self {
        Lists {
            lists: Arc::new(Mutex::new(HashMap::new())),
        }
    }
}

impl<T> Lists<T> {
    /// Job `id`'s list, read with `load` the first time.
    pub async fn get<F>(&self, id: i64, load: F) -> StoreResult<Arc<Vec<T>>>
    where
        F: Future<Output = StoreResult<Vec<T>>>,
    {
        if let Some(list) = self.guard().get(&id).cloned() {
            return Ok(list);
        }
        let list = Arc::new(load.await?);
        self.guard().insert(id, list.clone());
        Ok(list)
    }

    /// Drops job `id`'s list (the job ended, or is another instance's).
    pub fn forget(&self, id: i64) {
        self.guard().remove(&id);
    }

    fn guard(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Arc<Vec<T>>>> {
        self.lists.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
