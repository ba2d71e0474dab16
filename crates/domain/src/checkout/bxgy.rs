//! Buy `buy`, get `get` free: which units of an order a `buy_x_get_y` coupon makes free.
//!
//! The rule, on the in-scope purchase units (each unit of an in-scope `item` or `rent` line;
//! quantities count across lines; deposits and shipping are never units):
//!
//! - `units` = every in-scope purchase unit; `gift units` = those of lines the [`Gift`]
//!   matches (all of them for `cheapest`).
//! - An application takes `buy + get` distinct units, `get` of them gift units, and makes
//!   those `get` free. A gift unit may also be paid for as one of the `buy` units: units that
//!   are not gifts are used as `buy` units first, then the dearest gift units.
//! - So `applications = min(units / (buy + get), gift units / get, max_applications)`,
//!   rounded down, and `applications × get` gift units are free: the **cheapest** gift units,
//!   lowest unit price first, ties to the earlier line (the merchant-safe, usual choice: the
//!   buyer pays for the dearer units).
//!
//! For `cheapest` this is the usual "cheapest free" rule: with buy 2 get 1, three units make
//! one application and the cheapest unit is free; six make two and the two cheapest are free.

use crate::checkout::order::Order;
use crate::coupon::Gift;
use crate::money::Money;

/// The `buy_x_get_y` terms, as the arithmetic needs them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bxgy<'a> {
    pub buy: u32,
    pub get: u32,
    pub gift: &'a Gift,
    pub max_applications: Option<u32>,
}

impl Bxgy<'_> {
    /// How many times the offer applies to `units` in-scope units of which `gift_units` are
    /// gift units.
    pub(crate) fn applications(&self, units: i64, gift_units: i64) -> i64 {
        // A stored value keeps buy, get >= 1 (`check_stored`); `max(1)` keeps this total.
        let get = i64::from(self.get.max(1));
        let group = i64::from(self.buy.max(1)) + get;
        let most = self.max_applications.map_or(i64::MAX, i64::from);
        (units / group).min(gift_units / get).min(most)
    }

    /// Per in-scope purchase line (`mask`), in line order: the amount of its units that are
    /// free, zero included. Each is `unit_price × free units of the line`, at most the line's
    /// amount.
    pub(crate) fn free_amounts(&self, order: &Order, mask: &[bool]) -> Vec<(usize, Money)> {
        let lines: Vec<usize> = (0..order.lines.len())
            .filter(|&i| mask[i] && order.lines[i].kind.is_purchase())
            .collect();
        let mut gifts: Vec<usize> = lines
            .iter()
            .copied()
            .filter(|&i| self.gift.matches(&order.lines[i]))
            .collect();
        let qty = |i: usize| order.lines[i].quantity;
        let units: i64 = lines.iter().map(|&i| qty(i)).sum();
        let gift_units: i64 = gifts.iter().map(|&i| qty(i)).sum();
        // At most gift_units (<= 500 lines × 10000 units): no overflow.
        let mut free = self.applications(units, gift_units) * i64::from(self.get);
        // Cheapest unit first; the sort is stable, so equal prices keep line order.
        gifts.sort_by_key(|&i| order.lines[i].unit_price);
        let mut free_of = vec![0i64; order.lines.len()];
        for i in gifts {
            if free == 0 {
                break;
            }
            let take = qty(i).min(free);
            free_of[i] = take;
            free -= take;
        }
        let amounts = order.amounts();
        lines
            .into_iter()
            .map(|i| {
                let l = &order.lines[i];
                // take <= quantity, so this is at most the line's amount and cannot overflow.
                let part = l
                    .unit_price
                    .checked_mul(free_of[i])
                    .map_or(amounts[i], |p| p.min(amounts[i]));
                (i, part)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(buy: u32, get: u32, max: Option<u32>) -> Bxgy<'static> {
        Bxgy {
            buy,
            get,
            gift: &Gift::Cheapest,
            max_applications: max,
        }
    }

    #[test]
    fn applications_round_down_and_respect_every_limit() {
        let b2g1 = offer(2, 1, None);
        assert_eq!(b2g1.applications(2, 2), 0);
        assert_eq!(b2g1.applications(3, 3), 1);
        assert_eq!(b2g1.applications(5, 5), 1);
        assert_eq!(b2g1.applications(6, 6), 2);
        // Named gift: 10 units but only one gift unit.
        assert_eq!(b2g1.applications(10, 1), 1);
        assert_eq!(b2g1.applications(10, 0), 0);
        assert_eq!(offer(2, 1, Some(1)).applications(9, 9), 1);
        // buy 1 get 2: 3 units make one application only when 2 of them are gifts.
        assert_eq!(offer(1, 2, None).applications(3, 1), 0);
        assert_eq!(offer(1, 2, None).applications(3, 2), 1);
        // Extreme stored values do not overflow.
        let huge = offer(u32::MAX, u32::MAX, Some(u32::MAX));
        assert_eq!(huge.applications(5_000_000, 5_000_000), 0);
        assert_eq!(offer(0, 0, None).applications(4, 4), 2);
    }
}
