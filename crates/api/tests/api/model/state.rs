//! The model: what the API should answer, in plain structs, with time in whole minutes after
//! day zero. It knows only what DESIGN.md §3-§4 and the route docs promise, plus the one piece
//! of process memory that changes an answer: templates the claim engine has seen sold out.

use std::collections::BTreeMap;

/// The app's `cache_ttl` in the model's minutes: how long a sold-out answer is trusted in
/// memory.
pub const MEMO_MINUTES: i64 = 10;

/// Users `u-0` .. `u-2`.
pub const USERS: usize = 3;
/// What every model template takes off, and what every model order costs (one line).
pub const AMOUNT: i64 = 1_000;
pub const PRICE: i64 = 10_000;
/// `AppSettings::default().lock_ttl`, in minutes.
pub const LOCK_TTL: i64 = 15;

pub fn uid(u: usize) -> String {
    format!("u-{u}")
}

pub fn oid(o: u8) -> String {
    format!("o-{o}")
}

#[derive(Clone, Debug)]
pub struct Tpl {
    pub id: i64,
    pub stock: i64,
    pub limit: i64,
    /// Claim window [start, end); coupons valid until `until` (>= end), all in minutes.
    pub start: i64,
    pub end: i64,
    pub until: i64,
    pub claimed: i64,
    /// Coupons each user was ever given (used and expired ones count against the limit).
    pub held: [i64; USERS],
}

impl Tpl {
    /// Why the template takes no claims at `now` (`not_claimable`'s `reason`), if it does not.
    pub fn refusal(&self, now: i64) -> Option<&'static str> {
        if now < self.start {
            Some("not_started")
        } else if now < self.end {
            None
        } else if now < self.until {
            Some("ended")
        } else {
            Some("expired")
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    Unused,
    Locked,
    Used,
}

#[derive(Clone, Debug)]
pub struct Cpn {
    pub template: usize,
    pub user: usize,
    pub until: i64,
    pub held: Held,
}

impl Cpn {
    /// The status the API shows at `now`: an unused coupon past its validity is expired
    /// (whether or not the scheduler or a released lock has stored that yet).
    pub fn status(&self, now: i64) -> &'static str {
        match self.held {
            Held::Used => "used",
            Held::Locked => "locked",
            Held::Unused if now >= self.until => "expired",
            Held::Unused => "unused",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Ord {
    /// The lock's body: the payer and the one coupon (a replay must send exactly these).
    pub user: usize,
    pub coupon: i64,
    pub state: &'static str,
    pub deadline: i64,
}

/// What a claim should get.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimAnswer {
    /// 201 with a new coupon (its id comes from the server and is recorded with [`Model::issued`]).
    Issued,
    /// 201 with this earlier coupon, `idempotent-replayed: true`.
    Replayed(i64),
    /// 409 with this code (and `reason` for `not_claimable`).
    Refused(&'static str, Option<&'static str>),
    /// 422 `idempotency_key_reused`.
    KeyReused,
}

/// What a lock should get.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockAnswer {
    /// 200: the order as recorded (new, or replayed).
    Order,
    Conflict,
    Refused(Vec<&'static str>),
}

#[derive(Clone, Debug, Default)]
pub struct Model {
    pub now: i64,
    pub templates: Vec<Tpl>,
    /// By coupon id.
    pub coupons: BTreeMap<i64, Cpn>,
    /// Idempotency key -> (template id, user, coupon): only keys whose claim issued a coupon
    /// (a refused claim records no key).
    pub keys: BTreeMap<u8, (i64, usize, i64)>,
    /// Idempotency key -> the last claim sent with it (template index, user), for retries.
    pub attempts: BTreeMap<u8, (usize, usize)>,
    pub orders: BTreeMap<u8, Ord>,
    /// The claim engine's memory of sold-out templates, with the minute each was seen: for
    /// [`MEMO_MINUTES`] after that, claims without a key are answered `sold_out` before
    /// anything else; forgotten on restart.
    pub sold_out_seen: BTreeMap<i64, i64>,
}

impl Model {
    /// The outcome of a claim of template index `t` for `user`, and what it changes (except
    /// the new coupon, whose id only the server knows).
    pub fn claim(&mut self, t: usize, user: usize, key: Option<u8>) -> ClaimAnswer {
        let now = self.now;
        let tpl = &self.templates[t];
        if let Some(k) = key {
            // A key is looked up first: a retry finds its coupon even when the template
            // stopped taking claims or sold out since.
            if let Some(&(tid, u, c)) = self.keys.get(&k) {
                return if (tid, u) == (tpl.id, user) {
                    ClaimAnswer::Replayed(c)
                } else {
                    ClaimAnswer::KeyReused
                };
            }
        } else if self
            .sold_out_seen
            .get(&tpl.id)
            .is_some_and(|&seen| now - seen < MEMO_MINUTES)
        {
            return ClaimAnswer::Refused("sold_out", None);
        }
        if let Some(why) = tpl.refusal(now) {
            return ClaimAnswer::Refused("not_claimable", Some(why));
        }
        // The database checks the per-user limit before the stock.
        if tpl.held[user] >= tpl.limit {
            return ClaimAnswer::Refused("limit_reached", None);
        }
        if tpl.claimed >= tpl.stock {
            self.sold_out_seen.insert(tpl.id, now);
            return ClaimAnswer::Refused("sold_out", None);
        }
        ClaimAnswer::Issued
    }

    /// Records coupon `id` issued from template index `t` to `user` (by a claim or issuance).
    pub fn issued(&mut self, t: usize, user: usize, id: i64) {
        let tpl = &mut self.templates[t];
        tpl.claimed += 1;
        tpl.held[user] += 1;
        let until = tpl.until;
        let fresh = self
            .coupons
            .keys()
            .next_back()
            .is_none_or(|&last| id > last);
        assert!(fresh, "coupon id {id} is not after every earlier one");
        self.coupons.insert(
            id,
            Cpn {
                template: t,
                user,
                until,
                held: Held::Unused,
            },
        );
    }

    /// Bulk issuance to `users` (distinct) when the template is active: each user in order is
    /// skipped at the limit, issued while stock lasts, else counted sold out. Returns
    /// (issued users, skipped, sold out); the caller records the coupons.
    pub fn issue(&self, t: usize, users: &[usize]) -> (Vec<usize>, u64, u64) {
        let tpl = &self.templates[t];
        let (mut issued, mut skipped, mut sold_out) = (vec![], 0, 0);
        for &u in users {
            if tpl.held[u] >= tpl.limit {
                skipped += 1;
            } else if tpl.claimed + (issued.len() as i64) < tpl.stock {
                issued.push(u);
            } else {
                sold_out += 1;
            }
        }
        (issued, skipped, sold_out)
    }

    /// A lock of `coupon` for `order` paid by `user`.
    pub fn lock(&mut self, order: u8, user: usize, coupon: i64) -> LockAnswer {
        if let Some(o) = self.orders.get(&order) {
            // The order id is taken: the same body replays, another is a conflict.
            return if (o.user, o.coupon) == (user, coupon) {
                LockAnswer::Order
            } else {
                LockAnswer::Conflict
            };
        }
        let Some(c) = self.coupons.get_mut(&coupon).filter(|c| c.user == user) else {
            return LockAnswer::Refused(vec!["not_owner"]);
        };
        let mut reasons = vec![];
        if self.now >= c.until {
            reasons.push("expired");
        }
        match c.held {
            Held::Locked => reasons.push("locked"),
            Held::Used => reasons.push("used"),
            Held::Unused => {}
        }
        if !reasons.is_empty() {
            return LockAnswer::Refused(reasons);
        }
        c.held = Held::Locked;
        // A lock never outlives its coupon: its deadline ends at the coupon's validity.
        let deadline = (self.now + LOCK_TTL).min(c.until);
        self.orders.insert(
            order,
            Ord {
                user,
                coupon,
                state: "locked",
                deadline,
            },
        );
        LockAnswer::Order
    }

    /// Ends a held lock in `state`, giving its coupon back.
    fn release(&mut self, order: u8, state: &'static str) {
        let o = self.orders.get_mut(&order).expect("a known order");
        o.state = state;
        let c = self.coupons.get_mut(&o.coupon).expect("a known coupon");
        c.held = Held::Unused;
    }

    /// Confirm: `Ok(state)` for a 200, `Err(code)` for a 4xx.
    pub fn confirm(&mut self, order: u8) -> Result<&'static str, &'static str> {
        let Some(o) = self.orders.get(&order) else {
            return Err("not_found");
        };
        match o.state {
            "confirmed" => Ok("confirmed"),
            "locked" if self.now >= o.deadline => {
                // Past the deadline the confirm finds the lock ended, and ends it.
                self.release(order, "expired");
                Err("order_ended")
            }
            "locked" => {
                let coupon = o.coupon;
                self.orders.get_mut(&order).expect("known").state = "confirmed";
                self.coupons.get_mut(&coupon).expect("known").held = Held::Used;
                Ok("confirmed")
            }
            _ => Err("order_ended"),
        }
    }

    /// Cancel: `Ok(state)` for a 200, `Err(code)` for a 4xx.
    pub fn cancel(&mut self, order: u8) -> Result<&'static str, &'static str> {
        let Some(o) = self.orders.get(&order) else {
            return Err("not_found");
        };
        match o.state {
            "confirmed" => Err("already_used"),
            "locked" if self.now >= o.deadline => {
                self.release(order, "expired");
                Ok("expired")
            }
            "locked" => {
                self.release(order, "cancelled");
                Ok("cancelled")
            }
            ended => Ok(ended),
        }
    }

    /// What a sweep at `now` ends: every held lock whose deadline has come.
    pub fn sweep(&mut self) -> Vec<String> {
        let due: Vec<u8> = self
            .orders
            .iter()
            .filter(|(_, o)| o.state == "locked" && o.deadline <= self.now)
            .map(|(k, _)| *k)
            .collect();
        for &o in &due {
            self.release(o, "expired");
        }
        due.into_iter().map(oid).collect()
    }
}
