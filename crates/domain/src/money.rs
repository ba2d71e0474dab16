//! Money and percentages. Money is never a float.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A non-negative amount in minor units (fen, cents) of the one configured currency.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    ToSchema,
)]
#[serde(try_from = "i64", into = "i64")]
#[schema(value_type = i64, example = 2000)]
pub struct Money(i64);

/// The largest amount coupond accepts: 10^15 minor units, far above any real price, and small
/// enough that a sum of a few thousand of them cannot overflow an i64.
pub const MONEY_MAX: i64 = 1_000_000_000_000_000;

impl Money {
    pub const ZERO: Money = Money(0);

    /// Parses minor units; negative or absurdly large amounts are refused.
    pub fn new(minor: i64) -> Result<Self, String> {
        if minor < 0 {
            return Err(format!("amount must not be negative, got {minor}"));
        }
        if minor > MONEY_MAX {
            return Err(format!("amount must be at most {MONEY_MAX}, got {minor}"));
        }
        Ok(Money(minor))
    }

    pub fn minor(self) -> i64 {
        self.0
    }

    /// `self * bps / 10000`, rounded down (a discount never rounds in the buyer's favour past
    /// what was promised, nor against them by more than one minor unit).
    pub fn percent(self, bps: BasisPoints) -> Money {
        // i128: MONEY_MAX * 10_000 does not fit in i64.
        Money((i128::from(self.0) * i128::from(bps.0) / 10_000) as i64)
    }

    pub fn min(self, other: Money) -> Money {
        Money(self.0.min(other.0))
    }

    pub fn saturating_sub(self, other: Money) -> Money {
        Money((self.0 - other.0).max(0))
    }

    /// `self + other`, or `None` above [`MONEY_MAX`].
    pub fn checked_add(self, other: Money) -> Option<Money> {
        // Both are at most MONEY_MAX, so the i64 sum cannot overflow.
        Money::new(self.0 + other.0).ok()
    }

    /// `self + other`, clamped to [`MONEY_MAX`]. For sums already bounded by a validated total,
    /// where the clamp never bites but a panic must stay impossible.
    pub fn saturating_add(self, other: Money) -> Money {
        Money((self.0 + other.0).min(MONEY_MAX))
    }

    /// `self * n`, or `None` when `n` is negative or the product is above [`MONEY_MAX`].
    pub fn checked_mul(self, n: i64) -> Option<Money> {
        if n < 0 {
            // Even for zero: a negative count is never meaningful.
            return None;
        }
        let p = i128::from(self.0) * i128::from(n);
        i64::try_from(p).ok().and_then(|p| Money::new(p).ok())
    }

    /// `self / n` rounded down; `None` when `n` is not positive.
    pub fn checked_div(self, n: i64) -> Option<Money> {
        (n > 0).then(|| Money(self.0 / n))
    }

    /// Splits `self` into parts proportional to `weights`, rounding each down and handing the
    /// remainder out one minor unit at a time to the largest fractional remainders (ties to the
    /// earlier index). The parts always sum to exactly `self`. With all weights zero the split
    /// is even.
    pub fn split(self, weights: &[Money]) -> Vec<Money> {
        if weights.is_empty() {
            return Vec::new();
        }
        let even = weights.iter().all(|w| w.0 == 0);
        let weight = |w: &Money| if even { 1 } else { w.0 };
        // i64 arithmetic where `self × weight` and the sum fit, i128 otherwise: a quote splits
        // every template's discount over up to 500 lines, and i128 division was a tenth of
        // its time.
        let sum: i128 = weights.iter().map(|w| i128::from(weight(w))).sum();
        let widest = weights.iter().map(weight).max().unwrap_or(0);
        let narrow = i64::try_from(sum)
            .ok()
            .filter(|_| self.0.checked_mul(widest).is_some());
        let parts = match narrow {
            Some(sum) => largest_remainder(self.0, sum, weights.iter().map(weight)),
            None => largest_remainder(
                i128::from(self.0),
                sum,
                weights.iter().map(|w| i128::from(weight(w))),
            ),
        };
        parts.into_iter().map(Money).collect()
    }

    /// [`split`](Self::split) over the amounts of `items`, each replaced by its part; the
    /// index beside each amount stays. The same parts, without the copies: a quote splits
    /// every stackable discount again over what the ones before it left.
    pub fn split_pairs(self, items: &mut [(usize, Money)]) {
        let sum: i128 = items.iter().map(|&(_, w)| i128::from(w.0)).sum();
        let widest = items.iter().map(|&(_, w)| w.0).max().unwrap_or(0);
        let narrow = i64::try_from(sum)
            .ok()
            .filter(|&s| s > 0 && self.0.checked_mul(widest).is_some());
        let Some(sum) = narrow else {
            // All weights zero (an even split) or a product past i64: the general path.
            let weights: Vec<Money> = items.iter().map(|&(_, w)| w).collect();
            for (item, part) in items.iter_mut().zip(self.split(&weights)) {
                item.1 = part;
            }
            return;
        };
        let mut remainders: Vec<(i64, usize)> = Vec::with_capacity(items.len());
        let mut handed = 0i64;
        for (k, item) in items.iter_mut().enumerate() {
            let q = self.0 * item.1 .0 / sum;
            remainders.push((self.0 * item.1 .0 - q * sum, k));
            item.1 = Money(q);
            handed += q;
        }
        let left = usize::try_from(self.0 - handed).unwrap_or(0);
        if left > 0 {
            // Largest remainder first; equal remainders go to the earlier index.
            let first = |a: &(i64, usize), b: &(i64, usize)| b.0.cmp(&a.0).then(a.1.cmp(&b.1));
            remainders.select_nth_unstable_by(left - 1, first);
            for &(_, k) in &remainders[..left] {
                items[k].1 .0 += 1;
            }
        }
    }

    /// Splits `self` into `n` parts that differ by at most one minor unit, larger parts first.
    pub fn split_even(self, n: usize) -> Vec<Money> {
        self.split(&vec![Money(1); n])
    }
}

/// `total` split in proportion to `weights` (summing to `sum`, positive): each part rounded
/// down, then the `left` minor units short handed out one each to the largest remainders, ties
/// to the earlier index. Only which remainders are the `left` largest matters, not their
/// order, so they are selected rather than sorted.
fn largest_remainder<T>(total: T, sum: T, weights: impl Iterator<Item = T>) -> Vec<i64>
where
    T: Copy + Ord + std::ops::Mul<Output = T> + std::ops::Div<Output = T>,
    T: std::ops::Sub<Output = T> + TryInto<i64>,
{
    let narrow = |v: T| v.try_into().unwrap_or(i64::MAX);
    let mut parts: Vec<i64> = Vec::with_capacity(weights.size_hint().0);
    let mut remainders: Vec<(T, usize)> = Vec::with_capacity(weights.size_hint().0);
    for (i, w) in weights.enumerate() {
        // One division per part (the remainder by multiplication).
        let q = total * w / sum;
        parts.push(narrow(q));
        remainders.push((total * w - q * sum, i));
    }
    // Each remainder is below `sum`, so fewer than one unit per part is left: at most
    // parts.len() - 1, and the parts sum to at most `total`, which is a Money.
    let handed: i64 = parts.iter().sum();
    let left = usize::try_from(narrow(total) - handed).unwrap_or(0);
    if left > 0 {
        // Largest remainder first; equal remainders go to the earlier index.
        let first = |a: &(T, usize), b: &(T, usize)| b.0.cmp(&a.0).then(a.1.cmp(&b.1));
        remainders.select_nth_unstable_by(left - 1, first);
        for &(_, i) in &remainders[..left] {
            parts[i] += 1;
        }
    }
    parts
}

impl TryFrom<i64> for Money {
    type Error = String;
    fn try_from(v: i64) -> Result<Self, String> {
        Money::new(v)
    }
}

impl From<Money> for i64 {
    fn from(m: Money) -> i64 {
        m.0
    }
}

/// A percentage in basis points: 0..=10000 (10000 = 100 %).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
#[serde(try_from = "i64", into = "i64")]
#[schema(value_type = i64, example = 1500)]
pub struct BasisPoints(u16);

impl BasisPoints {
    pub const ZERO: BasisPoints = BasisPoints(0);
    /// 10,000: the whole.
    pub const FULL: BasisPoints = BasisPoints(10_000);

    pub fn new(bps: i64) -> Result<Self, String> {
        if (0..=10_000).contains(&bps) {
            Ok(BasisPoints(bps as u16))
        } else {
            Err(format!("basis points must be from 0 to 10000, got {bps}"))
        }
    }

    pub fn get(self) -> u16 {
        self.0
    }
}

impl TryFrom<i64> for BasisPoints {
    type Error = String;
    fn try_from(v: i64) -> Result<Self, String> {
        BasisPoints::new(v)
    }
}

impl From<BasisPoints> for i64 {
    fn from(b: BasisPoints) -> i64 {
        i64::from(b.0)
    }
}

/// The platform's currency: an ISO 4217 code (`CNY`, `EUR`), three upper-case letters. Every
/// amount coupond keeps is in its minor unit; orders record it with their totals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(try_from = "String", into = "String")]
#[schema(value_type = String, example = "CNY")]
pub struct Currency([u8; 3]);

impl Currency {
    /// The Chinese yuan, coupond's default (the reference designs count in fen).
    pub const CNY: Currency = Currency(*b"CNY");

    pub fn parse(s: &str) -> Result<Self, String> {
        match s.as_bytes() {
            &[a, b, c] if [a, b, c].iter().all(u8::is_ascii_uppercase) => Ok(Currency([a, b, c])),
            _ => Err(format!(
                "a currency is an ISO 4217 code, three upper-case letters (CNY, EUR), not {s:?}"
            )),
        }
    }

    pub fn as_str(&self) -> &str {
        // Three ASCII upper-case letters, checked at construction.
        std::str::from_utf8(&self.0).unwrap_or("XXX")
    }
}

impl TryFrom<String> for Currency {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Currency::parse(&s)
    }
}

impl From<Currency> for String {
    fn from(c: Currency) -> String {
        c.as_str().to_owned()
    }
}

impl std::fmt::Display for Currency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod props;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn m(v: i64) -> Money {
        Money::new(v).unwrap()
    }

    #[test]
    fn refuses_negative_and_huge() {
        assert!(Money::new(-1).is_err());
        assert!(Money::new(MONEY_MAX + 1).is_err());
        assert!(BasisPoints::new(10_001).is_err());
        assert!(BasisPoints::new(-1).is_err());
        assert!(serde_json::from_str::<Money>("-5").is_err());
        assert!(serde_json::from_str::<Money>("1.5").is_err());
    }

    #[test]
    fn percent_rounds_down() {
        assert_eq!(m(999).percent(BasisPoints::new(1000).unwrap()), m(99));
        assert_eq!(m(1).percent(BasisPoints::new(9999).unwrap()), m(0));
        assert_eq!(
            m(MONEY_MAX).percent(BasisPoints::new(10_000).unwrap()),
            m(MONEY_MAX)
        );
    }

    #[test]
    fn checked_arithmetic_stays_in_range() {
        assert_eq!(m(2).checked_add(m(3)), Some(m(5)));
        assert_eq!(m(MONEY_MAX).checked_add(m(1)), None);
        assert_eq!(m(MONEY_MAX).saturating_add(m(MONEY_MAX)), m(MONEY_MAX));
        assert_eq!(m(300).checked_mul(12), Some(m(3600)));
        assert_eq!(m(300).checked_mul(-1), None);
        assert_eq!(m(0).checked_mul(-1), None);
        assert_eq!(m(MONEY_MAX).checked_mul(2), None);
        assert_eq!(m(MONEY_MAX).checked_mul(i64::MAX), None);
        assert_eq!(m(299_999).checked_div(30), Some(m(9_999)));
        assert_eq!(m(1).checked_div(0), None);
    }

    #[test]
    fn split_examples() {
        assert_eq!(m(100).split_even(3), vec![m(34), m(33), m(33)]);
        assert_eq!(m(10).split(&[m(1), m(1), m(2)]), vec![m(3), m(2), m(5)]);
        assert_eq!(m(7).split(&[m(0), m(0)]), vec![m(4), m(3)]);
        assert_eq!(m(5).split(&[]), Vec::<Money>::new());
    }

    /// Largest remainder as defined, written plainly in i128 with every remainder sorted.
    fn split_by_sorting(total: i64, weights: &[i64]) -> Vec<i64> {
        let even = weights.iter().all(|&w| w == 0);
        let w: Vec<i128> = weights
            .iter()
            .map(|&w| if even { 1 } else { w as i128 })
            .collect();
        let sum: i128 = w.iter().sum();
        let mut parts: Vec<i128> = w.iter().map(|w| total as i128 * w / sum).collect();
        let left = total as i128 - parts.iter().sum::<i128>();
        let mut rem: Vec<(i128, usize)> = (0..w.len())
            .map(|i| (total as i128 * w[i] - parts[i] * sum, i))
            .collect();
        rem.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for &(_, i) in rem.iter().take(left as usize) {
            parts[i] += 1;
        }
        parts.into_iter().map(|p| p as i64).collect()
    }

    proptest! {
        /// Both arithmetic paths (i64 for everyday amounts, i128 for huge ones) hand out the
        /// same parts as the definition, ties included (small weights repeat).
        #[test]
        fn split_is_largest_remainder_ties_to_the_earlier_part(
            total in prop_oneof![0..10_000i64, 0..=MONEY_MAX],
            weights in prop::collection::vec(prop_oneof![0..4i64, 0..100_000i64, 0..=MONEY_MAX], 1..80),
        ) {
            let money: Vec<Money> = weights.iter().copied().map(m).collect();
            let parts: Vec<i64> = m(total).split(&money).into_iter().map(Money::minor).collect();
            prop_assert_eq!(parts, split_by_sorting(total, &weights));
        }

        #[test]
        fn split_sums_exactly(total in 0..MONEY_MAX, weights in prop::collection::vec(0..MONEY_MAX / 1000, 1..60)) {
            let weights: Vec<Money> = weights.into_iter().map(m).collect();
            let parts = m(total).split(&weights);
            prop_assert_eq!(parts.len(), weights.len());
            prop_assert_eq!(parts.iter().map(|p| p.minor() as i128).sum::<i128>(), total as i128);
            let wsum: i128 = weights.iter().map(|w| w.minor() as i128).sum();
            for (p, w) in parts.iter().zip(&weights) {
                prop_assert!(p.minor() >= 0);
                if wsum > 0 {
                    // Each part is within one unit of its exact proportional share.
                    let exact_floor = total as i128 * w.minor() as i128 / wsum;
                    prop_assert!(p.minor() as i128 >= exact_floor && p.minor() as i128 <= exact_floor + 1);
                }
            }
        }

        #[test]
        fn percent_never_exceeds_base(base in 0..MONEY_MAX, bps in 0i64..=10_000) {
            let d = m(base).percent(BasisPoints::new(bps).unwrap());
            prop_assert!(d.minor() >= 0 && d <= m(base));
            // Rounded down: the exact value is within one minor unit above.
            let exact = base as i128 * bps as i128;
            prop_assert!(d.minor() as i128 * 10_000 <= exact && exact < (d.minor() as i128 + 1) * 10_000);
        }

        #[test]
        fn money_serde_round_trips(v in 0..MONEY_MAX) {
            let json = serde_json::to_string(&m(v)).unwrap();
            prop_assert_eq!(serde_json::from_str::<Money>(&json).unwrap(), m(v));
        }
    }
}
