//! What conditions read: the order's facts for one template, the customer, and the clock in
//! the platform's time zone.

use crate::ids::CityId;
use crate::money::Money;
use crate::tags::Tag;
use crate::time::Timestamp;
use crate::zone::Zone;

/// The weekdays' names, Monday first, as `order.weekday` takes them.
pub(crate) const WEEKDAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/// Minutes in a day: `order.local_time` is a minute of the day, `00:00` to `23:59`.
pub(crate) const DAY_MINUTES: i64 = 24 * 60;

/// What coupond knows of an order's user, read when a template's conditions ask
/// (`customer.*` facts).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Customer {
    /// Sorted, without repeats.
    tags: Vec<Tag>,
    confirmed_orders: u64,
}

impl Customer {
    /// A user with these tags and this many confirmed orders.
    pub fn new(mut tags: Vec<Tag>, confirmed_orders: u64) -> Self {
        tags.sort_unstable();
        tags.dedup();
        Customer {
            tags,
            confirmed_orders,
        }
    }

    pub fn tags(&self) -> &[Tag] {
        &self.tags
    }

    /// Orders the user has placed so far: confirmed (refunded ones included: they were
    /// bought), or held by a lock.
    pub fn confirmed_orders(&self) -> u64 {
        self.confirmed_orders
    }

    /// No order placed before this one.
    pub fn first_order(&self) -> bool {
        self.confirmed_orders == 0
    }
}

/// The clock as conditions read it: the instant, and the platform's local day, weekday and
/// minute at that instant. Computed once per quote.
#[derive(Clone, Copy, Debug)]
pub struct LocalNow {
    pub now: Timestamp,
    zone: Zone,
    day: i64,
    /// 0 = Monday.
    weekday: i64,
    minute: i64,
}

impl LocalNow {
    pub fn new(now: Timestamp, zone: Zone) -> Self {
        let day = zone.day_of(now);
        let (h, m) = zone.hour_minute(now);
        LocalNow {
            now,
            zone,
            day,
            // 1970-01-01, local day 0, was a Thursday.
            weekday: (day + 3).rem_euclid(7),
            minute: i64::from(h) * 60 + i64::from(m),
        }
    }

    /// 0 (Monday) to 6 (Sunday).
    pub fn weekday(&self) -> i64 {
        self.weekday
    }

    /// The local minute of the day, 0 to 1439.
    pub fn minute(&self) -> i64 {
        self.minute
    }

    /// The instant of local `minute` (0 to 1439) on the day `days` after today.
    pub(crate) fn at(&self, days: i64, minute: i64) -> Option<Timestamp> {
        let m = u32::try_from(minute.clamp(0, DAY_MINUTES - 1)).ok()?;
        self.zone.at(self.day + days, m / 60, m % 60)
    }
}

/// What one template's conditions are tested against on one order.
#[derive(Clone, Copy, Debug)]
pub struct Facts<'a> {
    /// The in-scope purchase subtotal (after exclusions).
    pub subtotal: Money,
    /// The in-scope purchase units (after exclusions).
    pub quantity: i64,
    pub city_id: CityId,
    pub channel: Option<&'a str>,
    pub local: &'a LocalNow,
    /// `None` when it was not read: a `customer.*` test then fails, whatever its operator
    /// (coupond never grants on what it does not know).
    pub customer: Option<&'a Customer>,
}
