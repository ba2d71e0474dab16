//! [`ShelfCache`]: the coupon centre's shelf (every open template, `coupond_engine::centre`),
//! read whole at most once per `ttl` and mended per template in between.
//!
//! A notice about one template (paused, resumed, edited, sold out) marks that template stale
//! rather than dropping the shelf: the next reader reads the stale templates again in one query
//! and puts them in place ([`Shelf::with_fresh`]). Dropping the whole shelf on every notice
//! let one merchant flipping its own template 75 times a second make every reader reload 3,000
//! templates (issue 61 point 4). The whole shelf is still read again `ttl` after it was, so a
//! lost notice is outlived as before.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use coupond_domain::TemplateId;
use coupond_engine::centre::Shelf;

/// The shelf as read, and what went stale since.
#[derive(Debug)]
pub struct ShelfCache {
    ttl: Duration,
    // A std mutex: held only to read or change these fields, never across an await.
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// When the whole shelf was read, and the shelf (mended since, maybe).
    read: Option<(Instant, Arc<Shelf>)>,
    /// Templates named by notices since: read again before the shelf is used.
    stale: BTreeSet<TemplateId>,
    /// Moved on by [`ShelfCache::clear`]: a shelf read before it is not kept.
    generation: u64,
}

/// What a reader must do to get a shelf it may use.
#[derive(Debug)]
pub enum Need {
    /// Nothing: it is current.
    Current(Arc<Shelf>),
    /// Read these templates again into this shelf (read whole at the instant given).
    Mend {
        shelf: Arc<Shelf>,
        read_at: Instant,
        stale: Vec<TemplateId>,
        generation: u64,
    },
    /// Read the whole shelf; the stale templates it covers are these.
    Load {
        stale: Vec<TemplateId>,
        generation: u64,
    },
}

impl ShelfCache {
    /// A cache keeping a whole read `ttl` (zero: every reader reads it whole).
    pub fn new(ttl: Duration) -> Self {
        ShelfCache {
            ttl,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The shelf if it is current, else what to do to make one.
    pub fn need(&self) -> Need {
        let s = self.state();
        let stale: Vec<TemplateId> = s.stale.iter().copied().collect();
        match &s.read {
            Some((at, shelf)) if at.elapsed() < self.ttl => {
                if stale.is_empty() {
                    Need::Current(shelf.clone())
                } else {
                    Need::Mend {
                        shelf: shelf.clone(),
                        read_at: *at,
                        stale,
                        generation: s.generation,
                    }
                }
            }
            _ => Need::Load {
                stale,
                generation: s.generation,
            },
        }
    }

    /// Keeps `shelf`, read whole at `read_at` and current for the templates `covered`, unless
    /// the cache was cleared since `generation`; templates marked stale meanwhile stay so.
    pub fn keep(
        &self,
        generation: u64,
        read_at: Instant,
        shelf: Arc<Shelf>,
        covered: &[TemplateId],
    ) {
        let mut s = self.state();
        if s.generation != generation {
            return;
        }
        for t in covered {
            s.stale.remove(t);
        }
        s.read = Some((read_at, shelf));
    }

    /// Template `t` changed: read it again before the shelf is used.
    pub fn mark(&self, t: TemplateId) {
        self.state().stale.insert(t);
    }

    /// Forgets the shelf (everything may have changed: a lost connection to the other
    /// instances).
    pub fn clear(&self) {
        let mut s = self.state();
        s.generation += 1;
        s.read = None;
        s.stale.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(id: i64) -> TemplateId {
        TemplateId::new(id).unwrap()
    }

    #[test]
    fn a_notice_asks_for_its_template_only_and_a_clear_for_everything() {
        let c = ShelfCache::new(Duration::from_secs(60));
        let Need::Load { stale, generation } = c.need() else {
            panic!("nothing read yet")
        };
        assert!(stale.is_empty());
        let read_at = Instant::now();
        c.keep(generation, read_at, Arc::new(Shelf::default()), &[]);
        assert!(matches!(c.need(), Need::Current(_)));
        c.mark(t(7));
        c.mark(t(3));
        let Need::Mend {
            stale, generation, ..
        } = c.need()
        else {
            panic!("mend expected")
        };
        assert_eq!(stale, [t(3), t(7)]);
        c.mark(t(9)); // while the reader mends
        c.keep(generation, read_at, Arc::new(Shelf::default()), &stale);
        assert!(matches!(c.need(), Need::Mend { stale, .. } if stale == [t(9)]));
        let Need::Mend { generation, .. } = c.need() else {
            panic!()
        };
        c.clear(); // while the reader mends
        c.keep(generation, read_at, Arc::new(Shelf::default()), &[t(9)]);
        assert!(matches!(c.need(), Need::Load { .. }), "a clear wins");
    }

    #[test]
    fn a_zero_ttl_keeps_nothing() {
        let c = ShelfCache::new(Duration::ZERO);
        c.keep(0, Instant::now(), Arc::new(Shelf::default()), &[]);
        assert!(matches!(c.need(), Need::Load { .. }));
    }
}
