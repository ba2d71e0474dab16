//! Whether a condition tree holds on an order, and what is missing when it does not.
//!
//! A tree is tested with `not` pushed down to its tests (an `all` under `not` is an `any` of
//! the opposites, and so on), so what is missing is always said as tests that must hold.

use serde::Serialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

use crate::rules::compile::{hhmm, Atom, Conditions, Leaf, Node};
use crate::rules::condition::{Fact, Op};
use crate::rules::facts::{Facts, DAY_MINUTES, WEEKDAYS};
use crate::tags::Tag;

/// A test that keeps a coupon's conditions from holding, and what would make it hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct Unmet {
    pub fact: Fact,
    /// The operator that must hold: the test's own, or its opposite under a `not`.
    pub op: Op,
    /// What the fact is compared with, as the rule wrote it.
    #[schema(value_type = Object, example = json!(100000))]
    pub value: Value,
    /// The fact on this order now (`null`: not known, such as a channel the order did not
    /// send).
    #[schema(value_type = Object, example = json!(60000))]
    pub have: Value,
    /// What it takes: for `order.subtotal`, `order.quantity` and `customer.orders`, how much
    /// more (positive) or less (negative) of it; for `order.weekday` and `order.local_time`,
    /// the first instant from which it holds; otherwise `null` (`value` says it).
    #[schema(value_type = Object, example = json!(40000))]
    pub need: Value,
}

/// A fact's value on the order.
#[derive(Clone, Copy)]
enum Have<'a> {
    Int(i64),
    Text(Option<&'a str>),
    Tags(&'a [Tag]),
    /// A customer fact that was not read.
    Unknown,
}

fn have<'a>(fact: Fact, f: &Facts<'a>) -> Have<'a> {
    match fact {
        Fact::OrderSubtotal => Have::Int(f.subtotal.minor()),
        Fact::OrderQuantity => Have::Int(f.quantity),
        Fact::OrderCityId => Have::Int(f.city_id.get()),
        Fact::OrderChannel => Have::Text(f.channel),
        Fact::OrderWeekday => Have::Int(f.local.weekday()),
        Fact::OrderLocalTime => Have::Int(f.local.minute()),
        Fact::CustomerTags => f.customer.map_or(Have::Unknown, |c| Have::Tags(c.tags())),
        Fact::CustomerFirstOrder => f
            .customer
            .map_or(Have::Unknown, |c| Have::Int(i64::from(c.first_order()))),
        Fact::CustomerOrders => f.customer.map_or(Have::Unknown, |c| {
            Have::Int(i64::try_from(c.confirmed_orders()).unwrap_or(i64::MAX))
        }),
    }
}

/// The test itself, before any `not`.
fn test(l: &Leaf, have: Have<'_>) -> bool {
    let int = |i: usize| match l.atoms.get(i) {
        Some(Atom::Int(n)) => *n,
        _ => 0,
    };
    match have {
        Have::Int(x) => match l.op {
            Op::Eq => x == int(0),
            Op::Ne => x != int(0),
            Op::In => l.atoms.binary_search(&Atom::Int(x)).is_ok(),
            Op::NotIn => l.atoms.binary_search(&Atom::Int(x)).is_err(),
            Op::Gte => x >= int(0),
            Op::Gt => x > int(0),
            Op::Lte => x <= int(0),
            Op::Lt => x < int(0),
            Op::Between => int(0) <= x && x <= int(1),
        },
        Have::Text(s) => {
            let found = s.is_some_and(|s| l.atoms.binary_search_by(|a| a.cmp_text(s)).is_ok());
            match l.op {
                Op::Eq | Op::In => found,
                _ => !found,
            }
        }
        Have::Tags(tags) => {
            let any = tags
                .iter()
                .any(|t| l.atoms.binary_search_by(|a| a.cmp_text(t.as_str())).is_ok());
            match l.op {
                Op::In => any,
                _ => !any,
            }
        }
        Have::Unknown => false,
    }
}

/// Whether the test holds, with `negated` for an odd number of `not`s above it. An unknown
/// fact holds neither way.
fn leaf_holds(l: &Leaf, negated: bool, f: &Facts<'_>) -> bool {
    match have(l.fact, f) {
        Have::Unknown => false,
        h => test(l, h) != negated,
    }
}

fn holds(n: &Node, negated: bool, f: &Facts<'_>) -> bool {
    match n {
        Node::Leaf(l) => leaf_holds(l, negated, f),
        Node::Not(x) => holds(x, !negated, f),
        // `all` not negated, or `any` negated (none may hold): every child must.
        Node::All(xs) if !negated => xs.iter().all(|x| holds(x, negated, f)),
        Node::Any(xs) if negated => xs.iter().all(|x| holds(x, negated, f)),
        Node::All(xs) | Node::Any(xs) => xs.iter().any(|x| holds(x, negated, f)),
    }
}

fn unmet(n: &Node, negated: bool, f: &Facts<'_>) -> Vec<Unmet> {
    match n {
        Node::Leaf(l) if leaf_holds(l, negated, f) => Vec::new(),
        Node::Leaf(l) => vec![missing(l, negated, f)],
        Node::Not(x) => unmet(x, !negated, f),
        Node::All(xs) if !negated => xs.iter().flat_map(|x| unmet(x, negated, f)).collect(),
        Node::Any(xs) if negated => xs.iter().flat_map(|x| unmet(x, negated, f)).collect(),
        // One branch is enough: the one with the fewest tests missing (the first of equals).
        Node::All(xs) | Node::Any(xs) => {
            let mut best: Option<Vec<Unmet>> = None;
            for x in xs {
                let u = unmet(x, negated, f);
                if u.is_empty() {
                    return u;
                }
                if best.as_ref().is_none_or(|b| u.len() < b.len()) {
                    best = Some(u);
                }
            }
            best.unwrap_or_default()
        }
    }
}

impl Conditions {
    /// Whether the conditions hold on `facts`.
    pub fn holds(&self, facts: &Facts<'_>) -> bool {
        holds(&self.root, false, facts)
    }

    /// The tests that keep the conditions from holding on `facts`, each with what it takes;
    /// empty when they hold. An `any` group is reported by its branch with the fewest tests
    /// missing.
    pub fn unmet(&self, facts: &Facts<'_>) -> Vec<Unmet> {
        unmet(&self.root, false, facts)
    }
}

/// The failing test `l` (under `negated`) said as one that must hold.
fn missing(l: &Leaf, negated: bool, f: &Facts<'_>) -> Unmet {
    let h = have(l.fact, f);
    let must = match (negated, l.op.negated()) {
        (false, _) => l.clone(),
        (true, Some(op)) => Leaf { op, ..l.clone() },
        (true, None) => outside(l, h),
    };
    Unmet {
        fact: l.fact,
        op: must.op,
        need: need(&must, h, f),
        value: must.written,
        have: have_json(l.fact, h),
    }
}

/// Outside `[low, high]` as one test: below low or above high, whichever is sooner reached
/// (above high when nothing is below low).
fn outside(l: &Leaf, h: Have<'_>) -> Leaf {
    let bound = |i: usize, op: Op| Leaf {
        fact: l.fact,
        op,
        atoms: l.atoms.get(i).cloned().into_iter().collect(),
        written: l.written.get(i).cloned().unwrap_or(Value::Null),
    };
    let (Some(Atom::Int(low)), Some(Atom::Int(high))) = (l.atoms.first(), l.atoms.get(1)) else {
        return bound(0, Op::Lt);
    };
    let x = match h {
        Have::Int(x) => x,
        _ => *low,
    };
    let below = if l.fact == Fact::OrderLocalTime {
        // Above high comes today unless high is the day's last minute; below low, at midnight.
        high + 1 >= DAY_MINUTES
    } else {
        x - low < high - x
    };
    if below && *low > 0 {
        bound(0, Op::Lt)
    } else {
        bound(1, Op::Gt)
    }
}

fn have_json(fact: Fact, h: Have<'_>) -> Value {
    match (fact, h) {
        (_, Have::Unknown) | (_, Have::Text(None)) => Value::Null,
        (_, Have::Text(Some(s))) => json!(s),
        (_, Have::Tags(t)) => json!(t.iter().map(Tag::as_str).collect::<Vec<_>>()),
        (Fact::OrderWeekday, Have::Int(d)) => json!(WEEKDAYS[d.rem_euclid(7) as usize]),
        (Fact::OrderLocalTime, Have::Int(m)) => json!(hhmm(m)),
        (Fact::CustomerFirstOrder, Have::Int(b)) => json!(b == 1),
        (_, Have::Int(n)) => json!(n),
    }
}

/// What it takes for the test `l` to hold (see [`Unmet::need`]).
fn need(l: &Leaf, h: Have<'_>, f: &Facts<'_>) -> Value {
    let Have::Int(x) = h else {
        return Value::Null;
    };
    match l.fact {
        Fact::OrderSubtotal | Fact::OrderQuantity | Fact::CustomerOrders => {
            delta(l, x).map_or(Value::Null, |d| json!(d))
        }
        Fact::OrderLocalTime => next_minute(l, f).map_or(Value::Null, |t| json!(t)),
        Fact::OrderWeekday => (1..=7)
            .find(|k| test(l, Have::Int((f.local.weekday() + k) % 7)))
            .and_then(|k| f.local.at(k, 0))
            .map_or(Value::Null, |t| json!(t)),
        _ => Value::Null,
    }
}

/// How much the fact must change by for the ordered test `l` to hold.
fn delta(l: &Leaf, x: i64) -> Option<i64> {
    let a = match l.atoms.first()? {
        Atom::Int(a) => *a,
        Atom::Text(_) => return None,
    };
    Some(match l.op {
        Op::Eq | Op::Gte | Op::Lte => a - x,
        Op::Gt => a + 1 - x,
        Op::Lt => a - 1 - x,
        Op::Between => match l.atoms.get(1)? {
            Atom::Int(b) if x > *b => b - x,
            _ => a - x,
        },
        Op::Ne | Op::In | Op::NotIn => return None,
    })
}

/// The first local minute from now on at which the time test `l` holds: a test of the minute
/// of the day starts holding only at midnight or at one of its bounds (or just after one).
fn next_minute(l: &Leaf, f: &Facts<'_>) -> Option<crate::time::Timestamp> {
    let mut starts: Vec<i64> = vec![0];
    for a in &l.atoms {
        if let Atom::Int(a) = a {
            starts.extend([*a, a + 1]);
        }
    }
    starts.retain(|m| (0..DAY_MINUTES).contains(m));
    starts.sort_unstable();
    starts.dedup();
    let now = f.local.minute();
    let today = starts
        .iter()
        .find(|&&m| m > now && test(l, Have::Int(m)))
        .map(|&m| (0, m));
    let when = today.or_else(|| {
        starts
            .iter()
            .find(|&&m| test(l, Have::Int(m)))
            .map(|&m| (1, m))
    })?;
    f.local.at(when.0, when.1)
}
