//! The checks of a condition tree, and the form checkout tests: values parsed once, lists
//! sorted for binary search.

use std::cmp::Ordering;

use crate::error::{DomainError, Findings};
use crate::money::MONEY_MAX;
use crate::rules::condition::{Condition, ConditionTest, Fact, Op};
use crate::rules::facts::{DAY_MINUTES, WEEKDAYS};
use crate::tags::Tag;

/// Most tests one tree holds.
pub const MAX_LEAVES: usize = 32;
/// Most levels of a tree: a test alone is one level, `{"all": [test]}` two.
pub const MAX_DEPTH: usize = 4;
/// Most values of an `in` or `not_in` list.
pub const MAX_LIST: usize = 100;
/// Longest channel label.
pub const MAX_CHANNEL_CHARS: usize = 64;
/// Largest count (`order.quantity`, `customer.orders`) a test compares with.
const MAX_COUNT: i64 = 1_000_000_000;

/// A test's value, parsed: numbers, minutes, weekdays (0 = Monday) and `true`/`false` (1/0)
/// are integers; channels and tags text.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Atom {
    Int(i64),
    Text(String),
}

impl Atom {
    pub(crate) fn cmp_text(&self, s: &str) -> Ordering {
        match self {
            Atom::Int(_) => Ordering::Less,
            Atom::Text(t) => t.as_str().cmp(s),
        }
    }
}

/// A checked test.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Leaf {
    pub fact: Fact,
    pub op: Op,
    /// One value; sorted without repeats for `in`/`not_in`; `[low, high]` for `between`.
    pub atoms: Vec<Atom>,
    /// The value as written, to say it back.
    pub written: serde_json::Value,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Node {
    All(Vec<Node>),
    Any(Vec<Node>),
    Not(Box<Node>),
    Leaf(Leaf),
}

/// A condition tree that passed every check: what checkout tests. Built only by
/// [`Conditions::compile`].
#[derive(Clone, Debug, PartialEq)]
pub struct Conditions {
    pub(crate) root: Node,
    customer: bool,
}

impl Conditions {
    /// Checks `tree`: every group holds 1 or more conditions, at most [`MAX_DEPTH`] levels and
    /// [`MAX_LEAVES`] tests in all, each test's operator one its fact takes and its value of
    /// the fact's kind. Every broken node is reported, each by its path (`all[1].value`).
    pub fn compile(tree: &Condition) -> Result<Conditions, DomainError> {
        Self::compile_with(tree, true)
    }

    /// A stored tree, checked when it was written: each value still of its fact's kind, but
    /// not the size limits of a request ([`MAX_LEAVES`], [`MAX_DEPTH`], [`MAX_LIST`]), so a
    /// tree written under other limits stays readable.
    pub fn compile_stored(tree: &Condition) -> Result<Conditions, DomainError> {
        Self::compile_with(tree, false)
    }

    fn compile_with(tree: &Condition, limits: bool) -> Result<Conditions, DomainError> {
        let mut found = Findings::default();
        let mut leaves = 0;
        let mut walk = Walk {
            leaves: &mut leaves,
            found: &mut found,
            limits,
        };
        let root = node(tree, "", 1, &mut walk);
        if limits && leaves > MAX_LEAVES {
            found.check::<()>(Err(DomainError::invalid(
                "",
                "too_many_conditions",
                format!("a tree holds at most {MAX_LEAVES} tests, this one {leaves}"),
            )));
        }
        found.done()?;
        let root = root.ok_or_else(|| {
            DomainError::invalid("", "invalid_value", "the condition could not be read")
        })?;
        let customer = reads_customer(&root);
        Ok(Conditions { root, customer })
    }

    /// Whether a test reads a `customer.*` fact: checkout then reads the customer.
    pub fn reads_customer(&self) -> bool {
        self.customer
    }
}

fn reads_customer(n: &Node) -> bool {
    match n {
        Node::All(xs) | Node::Any(xs) => xs.iter().any(reads_customer),
        Node::Not(x) => reads_customer(x),
        Node::Leaf(l) => l.fact.is_customer(),
    }
}

pub(crate) fn join(base: &str, seg: &str) -> String {
    if base.is_empty() {
        seg.to_owned()
    } else {
        format!("{base}.{seg}")
    }
}

/// What a walk of a tree keeps: the tests counted, what is broken, and whether the size
/// limits apply.
struct Walk<'a> {
    leaves: &'a mut usize,
    found: &'a mut Findings,
    limits: bool,
}

fn node(c: &Condition, path: &str, depth: usize, w: &mut Walk<'_>) -> Option<Node> {
    if w.limits && depth > MAX_DEPTH {
        w.found.check::<()>(Err(DomainError::invalid(
            path,
            "too_deep",
            format!("a tree has at most {MAX_DEPTH} levels"),
        )));
        return None;
    }
    let group = |key: &str, items: &[Condition], w: &mut Walk<'_>| {
        let at = join(path, key);
        if items.is_empty() {
            w.found.check::<()>(Err(DomainError::invalid(
                &at,
                "invalid_length",
                "a group holds at least one condition",
            )));
        }
        let nodes: Vec<Option<Node>> = items
            .iter()
            .enumerate()
            .map(|(i, c)| node(c, &format!("{at}[{i}]"), depth + 1, w))
            .collect();
        nodes.into_iter().collect::<Option<Vec<Node>>>()
    };
    match c {
        Condition::All(items) => group("all", items, w).map(Node::All),
        Condition::Any(items) => group("any", items, w).map(Node::Any),
        Condition::Not(inner) => {
            node(inner, &join(path, "not"), depth + 1, w).map(|n| Node::Not(Box::new(n)))
        }
        Condition::Test(t) => {
            *w.leaves += 1;
            w.found.check(leaf(t, path, w.limits)).map(Node::Leaf)
        }
    }
}

fn leaf(t: &ConditionTest, path: &str, limits: bool) -> Result<Leaf, DomainError> {
    let ops = t.fact.ops();
    if !ops.contains(&t.op) {
        let names: Vec<&str> = ops.iter().map(|o| o.as_str()).collect();
        return Err(DomainError::invalid(
            &join(path, "op"),
            "invalid_operator",
            format!("{} takes {}", t.fact.as_str(), names.join(", ")),
        ));
    }
    let at = join(path, "value");
    let bad = |msg: String| DomainError::invalid(&at, "invalid_value", msg);
    let atoms = match t.op {
        Op::In | Op::NotIn => {
            let items = t
                .value
                .as_array()
                .filter(|a| !a.is_empty() && (!limits || a.len() <= MAX_LIST))
                .ok_or_else(|| {
                    bad(format!(
                        "{} takes a list of 1 to {MAX_LIST} values",
                        t.op.as_str()
                    ))
                })?;
            let mut atoms = items
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    atom(t.fact, v).map_err(|m| {
                        DomainError::invalid(&format!("{at}[{i}]"), "invalid_value", m)
                    })
                })
                .collect::<Result<Vec<Atom>, DomainError>>()?;
            atoms.sort_unstable();
            atoms.dedup();
            atoms
        }
        Op::Between => {
            let pair = t
                .value
                .as_array()
                .filter(|a| a.len() == 2)
                .ok_or_else(|| bad("between takes [low, high]".to_owned()))?;
            let low = atom(t.fact, &pair[0]).map_err(&bad)?;
            let high = atom(t.fact, &pair[1]).map_err(&bad)?;
            if low > high {
                return Err(bad("the low end must not be above the high end".to_owned()));
            }
            vec![low, high]
        }
        _ => vec![atom(t.fact, &t.value).map_err(bad)?],
    };
    Ok(Leaf {
        fact: t.fact,
        op: t.op,
        atoms,
        written: t.value.clone(),
    })
}

/// One value of `fact`, or what it must be.
fn atom(fact: Fact, v: &serde_json::Value) -> Result<Atom, String> {
    let int = |lo: i64, hi: i64, what: &str| {
        v.as_i64()
            .filter(|n| (lo..=hi).contains(n))
            .map(Atom::Int)
            .ok_or_else(|| format!("{} takes {what} from {lo} to {hi}", fact.as_str()))
    };
    let text = || {
        v.as_str()
            .ok_or_else(|| format!("{} takes text", fact.as_str()))
    };
    match fact {
        Fact::OrderSubtotal => int(0, MONEY_MAX, "minor units"),
        Fact::OrderQuantity | Fact::CustomerOrders => int(0, MAX_COUNT, "a count"),
        Fact::OrderCityId => int(1, i64::MAX, "a city id"),
        Fact::OrderChannel => {
            let s = text()?;
            check_channel(s)?;
            Ok(Atom::Text(s.to_owned()))
        }
        Fact::OrderWeekday => {
            let s = text()?;
            WEEKDAYS
                .iter()
                .position(|d| *d == s)
                .map(|i| Atom::Int(i as i64))
                .ok_or_else(|| "order.weekday takes mon, tue, wed, thu, fri, sat or sun".to_owned())
        }
        Fact::OrderLocalTime => parse_hhmm(text()?)
            .map(Atom::Int)
            .ok_or_else(|| "order.local_time takes \"HH:MM\" from 00:00 to 23:59".to_owned()),
        Fact::CustomerTags => Tag::parse(text()?).map(|t| Atom::Text(t.as_str().to_owned())),
        Fact::CustomerFirstOrder => v
            .as_bool()
            .map(|b| Atom::Int(i64::from(b)))
            .ok_or_else(|| "customer.first_order takes true or false".to_owned()),
    }
}

/// A channel label: 1 to [`MAX_CHANNEL_CHARS`] ASCII letters, digits and `_ . : -`.
pub fn check_channel(s: &str) -> Result<(), String> {
    let ok = |c: char| c.is_ascii_alphanumeric() || "_.:-".contains(c);
    if s.is_empty() || s.len() > MAX_CHANNEL_CHARS || !s.chars().all(ok) {
        return Err(format!(
            "a channel is 1 to {MAX_CHANNEL_CHARS} ASCII letters, digits and _.:-"
        ));
    }
    Ok(())
}

/// `"HH:MM"` as minutes of the day.
fn parse_hhmm(s: &str) -> Option<i64> {
    let (h, m) = s.split_once(':')?;
    let digits = |t: &str| t.len() == 2 && t.bytes().all(|b| b.is_ascii_digit());
    if !digits(h) || !digits(m) {
        return None;
    }
    let h: i64 = h.parse().ok()?;
    let m: i64 = m.parse().ok()?;
    let minute = h * 60 + m;
    (h < 24 && m < 60 && minute < DAY_MINUTES).then_some(minute)
}

/// Minutes of the day as `"HH:MM"`.
pub(crate) fn hhmm(minute: i64) -> String {
    format!("{:02}:{:02}", minute / 60, minute % 60)
}
