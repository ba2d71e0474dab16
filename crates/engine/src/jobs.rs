//! What the chunked background jobs (bulk issuance, bulk tags, code batches) share:
//! [`Lists`], the cache of each open job's item list, so the list is read from the database
//! once per job and process, not once per chunk; and [`Turns`], which lets the owners of open
//! jobs take turns chunk by chunk.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use coupond_store::{OpenJob, StoreResult};

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

/// Whose turn it is among the owners of open jobs: each pass serves the first owner after the
/// one served last (owners in the order of their oldest open job), one chunk of that owner's
/// oldest job, so a merchant's million-line backlog delays another merchant's job by one
/// chunk per turn, not by the whole backlog.
///
/// Lock: a `std` mutex around the last owner served, held only to read or set it.
#[derive(Debug, Default)]
pub struct Turns {
    last: Mutex<Option<i64>>,
}

impl Turns {
    /// `jobs` (oldest first) in the order to try them: owners from the one after the last
    /// served, wrapping around, each owner's jobs oldest first.
    pub fn order(&self, jobs: Vec<OpenJob>) -> Vec<OpenJob> {
        let mut owners: Vec<(i64, Vec<OpenJob>)> = Vec::new();
        for job in jobs {
            match owners.iter_mut().find(|(o, _)| *o == job.owner) {
                Some((_, list)) => list.push(job),
                None => owners.push((job.owner, vec![job])),
            }
        }
        let last = *self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let start = last
            .and_then(|l| owners.iter().position(|(o, _)| *o == l))
            .map_or(0, |i| i + 1);
        let n = owners.len();
        owners.rotate_left(if n == 0 { 0 } else { start % n });
        owners.into_iter().flat_map(|(_, list)| list).collect()
    }

    /// Records that `owner` was served this pass.
    pub fn served(&self, owner: i64) {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(owner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: i64, owner: i64) -> OpenJob {
        OpenJob { id, owner }
    }

    #[test]
    fn owners_take_turns_each_from_its_oldest_job() {
        let turns = Turns::default();
        let jobs = vec![job(1, 7), job(2, 7), job(3, 9), job(4, 0)];
        let ids = |v: Vec<OpenJob>| v.iter().map(|j| j.id).collect::<Vec<_>>();
        assert_eq!(ids(turns.order(jobs.clone())), [1, 2, 3, 4]);
        turns.served(7);
        assert_eq!(ids(turns.order(jobs.clone())), [3, 4, 1, 2]);
        turns.served(9);
        assert_eq!(ids(turns.order(jobs.clone())), [4, 1, 2, 3]);
        turns.served(0);
        assert_eq!(ids(turns.order(jobs.clone())), [1, 2, 3, 4], "wraps around");
        turns.served(5);
        assert_eq!(
            ids(turns.order(jobs)),
            [1, 2, 3, 4],
            "an owner gone starts over"
        );
    }
}
