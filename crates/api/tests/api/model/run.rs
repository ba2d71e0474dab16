//! [`Run`]: one sequence of ops against one app and the model, checking every answer, then
//! the whole final state.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use coupond_engine::{Scheduler, Sweeper};
use serde_json::{json, Value};

use super::state::*;
use super::{at_min, Op};
use crate::support::*;

/// One sequence against one app and the model.
pub struct Run {
    app: TestApp,
    m: Model,
    log: Vec<String>,
}

impl Run {
    pub fn new(app: TestApp) -> Run {
        Run {
            app,
            m: Model::default(),
            log: vec![],
        }
    }

    fn note(&mut self, what: String, r: &Reply) {
        let line = format!("{what} -> {}", self.normal(r));
        self.log.push(line);
    }

    /// A coupon id as the transcript keeps it: its place in the order of issue. PostgreSQL
    /// and MySQL hand out coupon ids from a sequence (an auto-increment), and a claim attempt
    /// that is rolled back and retried under the template's lock (see store-postgres
    /// `claims.rs`) leaves a gap; SQLite leaves none. Ids are opaque, so only their order is
    /// compared.
    fn rank(&self, id: i64) -> Value {
        match self.m.coupons.keys().position(|&k| k == id) {
            Some(p) => json!(format!("c{p}")),
            None => json!(id),
        }
    }

    /// A reply as the transcript keeps it: request ids (different by nature) dropped, coupon
    /// ids ranked.
    fn normal(&self, r: &Reply) -> String {
        fn walk(run: &Run, v: &mut Value) {
            match v {
                Value::Object(o) => {
                    if let Some(id) = o.get("coupon_id").and_then(Value::as_i64) {
                        o.insert("coupon_id".into(), run.rank(id));
                    }
                    // A coupon view (a claim's answer).
                    if o.contains_key("valid_until") {
                        if let Some(id) = o.get("id").and_then(Value::as_i64) {
                            o.insert("id".into(), run.rank(id));
                        }
                    }
                    o.remove("request_id");
                    o.values_mut().for_each(|v| walk(run, v));
                }
                Value::Array(a) => a.iter_mut().for_each(|v| walk(run, v)),
                _ => {}
            }
        }
        let mut body = r.body.clone();
        walk(self, &mut body);
        let replayed = r
            .headers
            .get("idempotent-replayed")
            .map_or("", |v| v.to_str().unwrap_or("?"));
        format!("{} {replayed} {body}", r.status.as_u16())
    }

    pub async fn run(mut self, ops: &[Op]) -> Vec<String> {
        for (i, op) in ops.iter().enumerate() {
            let ctx = format!("op {i} {op:?}");
            match op.clone() {
                Op::Create {
                    start,
                    hours,
                    valid_after,
                    stock,
                    limit,
                } => {
                    self.create(&ctx, start, hours, valid_after, stock, limit)
                        .await
                }
                Op::Claim { t, user, key } => self.claim(&ctx, t, user, key).await,
                Op::Retry(k) => {
                    let (t, user) = self.m.attempts.get(&k).copied().unwrap_or((0, 0));
                    self.claim(&ctx, t, user, Some(k)).await
                }
                Op::Issue { t, users } => self.issue(&ctx, t, &users).await,
                Op::Lock {
                    order,
                    coupon,
                    payer,
                    again,
                } => self.lock(&ctx, order, coupon, payer, again).await,
                Op::Confirm(o) => self.end(&ctx, o, "confirm").await,
                Op::Cancel(o) => self.end(&ctx, o, "cancel").await,
                Op::Advance { minutes, sweep } => {
                    self.m.now += minutes;
                    self.app.clock.advance(time::Duration::minutes(minutes));
                    if sweep {
                        self.sweep(&ctx).await;
                    }
                    self.log.push(format!("{ctx} -> now {}", self.m.now));
                }
                Op::Restart => {
                    self.app.restart().await;
                    self.m.sold_out_seen.clear();
                    self.log.push(ctx.clone());
                }
            }
            // Background work is stepped only by `Advance`, so a lock may be overdue here; the
            // rest of the audit (I1-I3 in the database) must hold after every single step.
            let violations = self
                .app
                .store
                .audit(at_min(self.m.now), time::Duration::days(3650))
                .await
                .unwrap();
            assert!(violations.is_empty(), "{ctx}: audit {violations:?}");
        }
        self.finish().await;
        self.log
    }

    async fn create(
        &mut self,
        ctx: &str,
        start: i64,
        hours: i64,
        after: i64,
        stock: i64,
        limit: i64,
    ) {
        let start = self.m.now + start;
        let (end, until) = (start + hours * 60, start + (hours + after) * 60);
        let body = json!({
            "title": "model",
            "value": {"kind": "amount_off", "amount": AMOUNT},
            "cities": [1],
            "total_stock": stock,
            "per_user_limit": limit,
            "stacking": "stackable",
            "claim_window": {"start": at_min(start), "end": at_min(end)},
            "validity": {"type": "fixed", "from": at_min(start), "until": at_min(until)}
        });
        let r = self.app.post("/v1/templates", self.app.m1(), body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{ctx}: {}", r.body);
        let id = r.body["id"].as_i64().unwrap();
        let r = self
            .app
            .post(
                &format!("/v1/templates/{id}/publish"),
                self.app.m1(),
                json!({}),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{ctx}: {}", r.body);
        self.note(format!("{ctx} template {id}"), &r);
        self.m.templates.push(Tpl {
            id,
            stock,
            limit,
            start,
            end,
            until,
            claimed: 0,
            held: [0; USERS],
        });
    }

    async fn claim(&mut self, ctx: &str, t: usize, user: usize, key: Option<u8>) {
        let t = t % self.m.templates.len();
        let id = self.m.templates[t].id;
        if let Some(k) = key {
            self.m.attempts.insert(k, (t, user));
        }
        let mut req = Request::builder()
            .method("POST")
            .uri(format!("/v1/templates/{id}/claims"))
            .header("authorization", format!("Bearer {}", self.app.service))
            .header("content-type", "application/json");
        if let Some(k) = key {
            req = req.header("idempotency-key", format!("k-{k}"));
        }
        let body = Body::from(json!({"user_id": uid(user)}).to_string());
        let r = self.app.send(req.body(body).unwrap()).await;
        let want = self.m.claim(t, user, key);
        let got = (r.status.as_u16(), r.code(), r.body["reason"].as_str());
        match want {
            ClaimAnswer::Issued | ClaimAnswer::Replayed(_) => {
                assert_eq!(got, (201, "", None), "{ctx}: {}", r.body);
                let coupon = r.body["id"].as_i64().unwrap();
                let replayed = matches!(want, ClaimAnswer::Replayed(_));
                assert_eq!(
                    r.headers["idempotent-replayed"],
                    if replayed { "true" } else { "false" },
                    "{ctx}"
                );
                if let ClaimAnswer::Replayed(c) = want {
                    assert_eq!(coupon, c, "{ctx}: a retry gets the first coupon");
                } else {
                    self.m.issued(t, user, coupon);
                    if let Some(k) = key {
                        self.m.keys.insert(k, (id, user, coupon));
                    }
                }
                let c = &self.m.coupons[&coupon];
                let seen = (
                    &r.body["user_id"],
                    &r.body["status"],
                    &r.body["template"]["id"],
                );
                let want = (&json!(uid(user)), &json!(c.status(self.m.now)), &json!(id));
                assert_eq!(seen, want, "{ctx}: {}", r.body);
            }
            ClaimAnswer::Refused(code, reason) => {
                assert_eq!(got, (409, code, reason), "{ctx}: {}", r.body)
            }
            ClaimAnswer::KeyReused => {
                assert_eq!(
                    got,
                    (422, "idempotency_key_reused", None),
                    "{ctx}: {}",
                    r.body
                )
            }
        }
        // After the model took the coupon, so that the transcript can rank its id.
        self.note(ctx.to_owned(), &r);
    }

    async fn issue(&mut self, ctx: &str, t: usize, users: &[usize]) {
        let t = t % self.m.templates.len();
        let id = self.m.templates[t].id;
        let names: Vec<String> = users.iter().map(|&u| uid(u)).collect();
        let r = self
            .app
            .post(
                &format!("/v1/templates/{id}/issuances"),
                self.app.m1(),
                json!({"user_ids": names}),
            )
            .await;
        self.note(ctx.to_owned(), &r);
        let tpl = &self.m.templates[t];
        let counts = |b: &Value| {
            let n = |k: &str| b[k].as_u64().unwrap_or(u64::MAX);
            (
                b["state"].clone(),
                n("requested"),
                n("issued"),
                n("skipped"),
                n("sold_out"),
            )
        };
        match tpl.refusal(self.m.now) {
            // Ended (or past its validity): refused before a job is made.
            Some("ended" | "expired") => {
                assert_eq!(
                    (r.status.as_u16(), r.code()),
                    (409, "not_claimable"),
                    "{ctx}: {}",
                    r.body
                );
            }
            // Not started: the job is made and fails at its first chunk, issuing nothing.
            Some(_) => {
                assert_eq!(r.status, StatusCode::CREATED, "{ctx}: {}", r.body);
                let want = (json!("failed"), users.len() as u64, 0, 0, 0);
                assert_eq!(counts(&r.body), want, "{ctx}: {}", r.body);
            }
            None => {
                let (issued, skipped, sold_out) = self.m.issue(t, users);
                assert_eq!(r.status, StatusCode::CREATED, "{ctx}: {}", r.body);
                let n = issued.len() as u64;
                let want = (json!("done"), users.len() as u64, n, skipped, sold_out);
                assert_eq!(counts(&r.body), want, "{ctx}: {}", r.body);
                // The answer names no coupons: find each one in its user's wallet.
                for u in issued {
                    let w = self.wallet(u).await;
                    let new: Vec<i64> = w
                        .iter()
                        .filter(|(c, _, tid)| *tid == id && !self.m.coupons.contains_key(c))
                        .map(|(c, _, _)| *c)
                        .collect();
                    assert_eq!(new.len(), 1, "{ctx}: one new coupon for {u}: {w:?}");
                    self.m.issued(t, u, new[0]);
                }
            }
        }
    }

    async fn lock(
        &mut self,
        ctx: &str,
        order: u8,
        coupon: usize,
        payer: Option<usize>,
        again: bool,
    ) {
        let (user, cid) = match self.m.orders.get(&order) {
            Some(o) if again => (o.user, o.coupon),
            _ => match self
                .m
                .coupons
                .iter()
                .nth(coupon % self.m.coupons.len().max(1))
            {
                Some((&id, c)) => (payer.unwrap_or(c.user), id),
                None => (payer.unwrap_or(0), 999_999),
            },
        };
        let body = json!({
            "order": {
                "user_id": uid(user),
                "city_id": 1,
                "lines": [{"product_id": "flat-1", "merchant_id": self.app.merchants[0].0.get(),
                           "category_id": 1, "unit_price": PRICE, "quantity": 1, "kind": "rent"}]
            },
            "coupon_ids": [cid]
        });
        let r = self
            .app
            .post(
                &format!("/v1/orders/{}/lock", oid(order)),
                &self.app.service,
                body,
            )
            .await;
        self.note(format!("{ctx} as {user} with {}", self.rank(cid)), &r);
        match self.m.lock(order, user, cid) {
            LockAnswer::Order => {
                assert_eq!(r.status, StatusCode::OK, "{ctx}: {}", r.body);
                self.check_order(ctx, order, &r.body);
                let want = (
                    &json!(AMOUNT),
                    &json!([{"coupon_id": cid, "discount": AMOUNT}]),
                );
                let seen = (&r.body["discount"], &r.body["coupons"]);
                assert_eq!(
                    (seen.0, &strip(seen.1)),
                    (want.0, want.1),
                    "{ctx}: {}",
                    r.body
                );
            }
            LockAnswer::Conflict => {
                assert_eq!(
                    (r.status.as_u16(), r.code()),
                    (409, "order_conflict"),
                    "{ctx}: {}",
                    r.body
                )
            }
            LockAnswer::Refused(reasons) => {
                assert_eq!(
                    (r.status.as_u16(), r.code(), &r.body["coupons"]),
                    (
                        409,
                        "coupons_not_applicable",
                        &json!([{"coupon_id": cid, "reasons": reasons}])
                    ),
                    "{ctx}: {}",
                    r.body
                );
            }
        }
    }

    /// Confirms or cancels.
    async fn end(&mut self, ctx: &str, order: u8, action: &str) {
        let order = match self
            .m
            .orders
            .keys()
            .nth(usize::from(order) % self.m.orders.len().max(1))
        {
            Some(&o) if order < super::ORDERS => o,
            _ => order,
        };
        let path = format!("/v1/orders/{}/{action}", oid(order));
        let r = self
            .app
            .call(
                axum::http::Method::POST,
                &path,
                Some(&self.app.service),
                None,
            )
            .await;
        self.note(ctx.to_owned(), &r);
        let want = if action == "confirm" {
            self.m.confirm(order)
        } else {
            self.m.cancel(order)
        };
        match want {
            Ok(state) => {
                assert_eq!(
                    (r.status, r.body["state"].as_str()),
                    (StatusCode::OK, Some(state)),
                    "{ctx}: {}",
                    r.body
                );
                self.check_order(ctx, order, &r.body);
            }
            Err(code) => {
                let status = if code == "not_found" { 404 } else { 409 };
                assert_eq!(
                    (r.status.as_u16(), r.code()),
                    (status, code),
                    "{ctx}: {}",
                    r.body
                );
            }
        }
    }

    /// An order view against the model's order.
    fn check_order(&self, ctx: &str, order: u8, body: &Value) {
        let o = &self.m.orders[&order];
        let seen = (
            &body["order_id"],
            &body["user_id"],
            &body["state"],
            &body["deadline"],
        );
        let want = (
            &json!(oid(order)),
            &json!(uid(o.user)),
            &json!(o.state),
            &json!(at_min(o.deadline)),
        );
        assert_eq!(seen, want, "{ctx}: {body}");
    }

    /// Steps the sweeper (it must end exactly the overdue locks) and the scheduler.
    async fn sweep(&mut self, ctx: &str) {
        let clock = Arc::new(self.app.clock.clone());
        let ended = Sweeper::new(self.app.store.clone(), clock.clone())
            .run_once()
            .await
            .unwrap();
        let mut ended: Vec<String> = ended.iter().map(|o| o.as_str().to_owned()).collect();
        ended.sort();
        assert_eq!(ended, self.m.sweep(), "{ctx}: the sweep");
        // The same holder across restarts, so the lease it left behind is its own.
        let scheduler = Scheduler::new(
            self.app.store.clone(),
            clock,
            time::Duration::minutes(5),
            "model",
        );
        assert!(scheduler.run_once().await.unwrap().leader, "{ctx}");
    }

    /// A user's coupons as (id, status, template id), by id.
    async fn wallet(&self, u: usize) -> Vec<(i64, String, i64)> {
        let r = self
            .app
            .get(
                &format!("/v1/users/{}/coupons?limit=200", uid(u)),
                &self.app.service,
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let mut w: Vec<(i64, String, i64)> = r.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let id = c["id"].as_i64().unwrap();
                (
                    id,
                    c["status"].as_str().unwrap().to_owned(),
                    c["template"]["id"].as_i64().unwrap(),
                )
            })
            .collect();
        w.sort();
        w
    }

    /// The whole final state: after a last sweep, every wallet, template and order as the API
    /// shows it, then the full audit (no lock may be left past its deadline).
    async fn finish(&mut self) {
        self.sweep("final").await;
        let now = self.m.now;
        for u in 0..USERS {
            let w = self.wallet(u).await;
            let want: Vec<(i64, String, i64)> = (self.m.coupons.iter())
                .filter(|(_, c)| c.user == u)
                .map(|(&id, c)| {
                    (
                        id,
                        c.status(now).to_owned(),
                        self.m.templates[c.template].id,
                    )
                })
                .collect();
            assert_eq!(w, want, "final wallet of {}", uid(u));
            let ranked: Vec<(Value, String)> =
                w.into_iter().map(|(c, s, _)| (self.rank(c), s)).collect();
            self.log.push(format!("wallet {u}: {ranked:?}"));
        }
        for (i, t) in self.m.templates.iter().enumerate() {
            let r = self
                .app
                .get(&format!("/v1/templates/{}", t.id), self.app.m1())
                .await;
            let held = |h: Held| {
                let n = self
                    .m
                    .coupons
                    .values()
                    .filter(|c| c.template == i && c.held == h)
                    .count();
                n as i64
            };
            let seen = ["claimed", "used", "given", "reserved"].map(|k| r.body[k].as_i64());
            let (used, locked) = (held(Held::Used), held(Held::Locked));
            let want = [t.claimed, used, used * AMOUNT, locked * AMOUNT].map(Some);
            assert_eq!(
                seen, want,
                "final counters of template {}: {}",
                t.id, r.body
            );
            self.log.push(format!("template {}: {seen:?}", t.id));
        }
        for &o in self.m.orders.keys() {
            let r = self
                .app
                .get(&format!("/v1/orders/{}", oid(o)), &self.app.service)
                .await;
            self.check_order("final", o, &r.body);
            let line = format!("order {o}: {}", self.normal(&r));
            self.log.push(line);
        }
        let violations = self
            .app
            .store
            .audit(at_min(now), time::Duration::ZERO)
            .await
            .unwrap();
        assert!(violations.is_empty(), "final audit: {violations:?}");
    }
}

/// A lock's `coupons` reduced to id and discount (the rest is the split, not modelled).
fn strip(coupons: &Value) -> Value {
    let list = coupons.as_array().cloned().unwrap_or_default();
    Value::Array(
        list.iter()
            .map(|c| json!({"coupon_id": c["coupon_id"], "discount": c["discount"]}))
            .collect(),
    )
}
