//! The order snapshot the order service sends for a quote, and its validation.

use std::ops::{Deref, Range};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::DomainError;
use crate::ids::{CategoryId, CityId, ListingId, MerchantId, UserId};
use crate::money::Money;
use crate::rules::check_channel;
use crate::text::check_text;

/// Most lines one order may have.
pub const MAX_LINES: usize = 500;
/// Largest quantity of one line.
pub const MAX_QUANTITY: i64 = 10_000;
/// Longest lease, in months.
pub const MAX_LEASE_MONTHS: i64 = 120;
/// Longest external product id, in characters.
pub const MAX_PRODUCT_ID_CHARS: usize = 128;

/// What an order line is for. Kinds decide which coupons can touch the line: price discounts
/// (and buy-x-get-y's free units) apply to `item` and `rent`, free days to `rent`, a deposit
/// waiver to `deposit`, and free shipping to `shipping`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LineKind {
    /// Goods or a service bought outright.
    Item,
    /// Rent of a lease (a rental listing).
    Rent,
    /// A refundable deposit.
    Deposit,
    /// Delivery; only free shipping applies to it.
    Shipping,
}

impl LineKind {
    pub const ALL: [LineKind; 4] = [
        LineKind::Item,
        LineKind::Rent,
        LineKind::Deposit,
        LineKind::Shipping,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            LineKind::Item => "item",
            LineKind::Rent => "rent",
            LineKind::Deposit => "deposit",
            LineKind::Shipping => "shipping",
        }
    }

    /// Whether the line is something bought (counts towards a threshold and takes price
    /// discounts), as opposed to a deposit or shipping.
    pub fn is_purchase(self) -> bool {
        matches!(self, LineKind::Item | LineKind::Rent)
    }
}

/// One line of an order as the order service sends it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LineDraft {
    /// The coupond listing, when the line is one. A line needs this or `product_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listing_id: Option<ListingId>,
    /// The order service's own product id (1 to 128 characters), for lines that are not
    /// coupond listings. Listing-scoped coupons never apply to such a line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(example = "sku-1001")]
    pub product_id: Option<String>,
    pub merchant_id: MerchantId,
    pub category_id: CategoryId,
    /// Price of one unit, minor units.
    pub unit_price: Money,
    /// 1..=10000. For rent billed per month this is the number of months billed.
    #[schema(example = 1)]
    pub quantity: i64,
    pub kind: LineKind,
}

/// The lease an order signs, when it is a rental.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LeaseDraft {
    /// Rent per month, minor units; free days are priced from it (daily rent = monthly / 30).
    pub monthly_rent: Money,
    /// 1..=120.
    #[schema(example = 12)]
    pub months: i64,
}

/// What the order service sends to ask for a quote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OrderDraft {
    /// Who pays; only this user's coupons apply.
    pub user_id: UserId,
    pub city_id: CityId,
    /// 1 to 500 lines.
    pub lines: Vec<LineDraft>,
    /// Present for a rental: a lease discount is scheduled over its months.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<LeaseDraft>,
    /// Where the order was placed (`app`, `web`, `mini-program`), as the order service labels
    /// it, for `order.channel` conditions: 1 to 64 ASCII letters, digits and `_ . : -`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(example = "app")]
    pub channel: Option<String>,
}

/// A validated lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lease {
    pub monthly_rent: Money,
    /// 1..=120.
    pub months: u32,
}

impl Lease {
    /// Daily rent: monthly rent / 30, rounded down (whatever the month's length).
    pub fn daily_rent(self) -> Money {
        self.monthly_rent.checked_div(30).unwrap_or(Money::ZERO)
    }
}

/// An [`OrderDraft`] that passed every rule, with each line's amount computed once. Built only
/// through `TryFrom`, so every amount and the total fit in [`Money`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Order {
    draft: OrderDraft,
    #[serde(skip)]
    amounts: Vec<Money>,
    #[serde(skip)]
    total: Money,
    #[serde(skip)]
    lease: Option<Lease>,
    /// `(listing, line index)` sorted, so a listing scope finds its lines by binary search
    /// instead of scanning its id list once per line.
    #[serde(skip)]
    by_listing: Vec<(ListingId, usize)>,
    /// `(category, line index)` sorted, for the same reason.
    #[serde(skip)]
    by_category: Vec<(CategoryId, usize)>,
}

impl Deref for Order {
    type Target = OrderDraft;
    fn deref(&self) -> &OrderDraft {
        &self.draft
    }
}

impl TryFrom<OrderDraft> for Order {
    type Error = DomainError;
    fn try_from(draft: OrderDraft) -> Result<Self, DomainError> {
        let n = draft.lines.len();
        if n == 0 || n > MAX_LINES {
            return Err(DomainError::invalid(
                "lines",
                "invalid_length",
                format!("an order has 1 to {MAX_LINES} lines, got {n}"),
            ));
        }
        let mut amounts = Vec::with_capacity(n);
        let mut total = Money::ZERO;
        for (i, line) in draft.lines.iter().enumerate() {
            let amount = check_line(line).map_err(|e| e.within(&format!("lines[{i}]")))?;
            total = total.checked_add(amount).ok_or_else(|| {
                DomainError::invalid(
                    "lines",
                    "invalid_value",
                    "the order total exceeds the largest amount coupond accepts",
                )
            })?;
            amounts.push(amount);
        }
        if let Some(c) = &draft.channel {
            check_channel(c).map_err(|m| DomainError::invalid("channel", "invalid_value", m))?;
        }
        let lease = match draft.lease {
            None => None,
            Some(l) => Some(check_lease(l).map_err(|e| e.within("lease"))?),
        };
        let mut by_listing: Vec<(ListingId, usize)> = draft
            .lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| l.listing_id.map(|id| (id, i)))
            .collect();
        by_listing.sort_unstable();
        let mut by_category: Vec<(CategoryId, usize)> = draft
            .lines
            .iter()
            .enumerate()
            .map(|(i, l)| (l.category_id, i))
            .collect();
        by_category.sort_unstable();
        Ok(Order {
            draft,
            amounts,
            total,
            lease,
            by_listing,
            by_category,
        })
    }
}

fn check_line(line: &LineDraft) -> Result<Money, DomainError> {
    match &line.product_id {
        Some(p) => check_text("product_id", p, 1, MAX_PRODUCT_ID_CHARS)?,
        None if line.listing_id.is_none() => {
            return Err(DomainError::invalid(
                "listing_id",
                "required",
                "a line needs a listing_id or a product_id",
            ))
        }
        None => {}
    }
    if !(1..=MAX_QUANTITY).contains(&line.quantity) {
        return Err(DomainError::invalid(
            "quantity",
            "invalid_value",
            format!("quantity must be from 1 to {MAX_QUANTITY}"),
        ));
    }
    line.unit_price.checked_mul(line.quantity).ok_or_else(|| {
        DomainError::invalid(
            "quantity",
            "invalid_value",
            "unit_price × quantity exceeds the largest amount coupond accepts",
        )
    })
}

fn check_lease(l: LeaseDraft) -> Result<Lease, DomainError> {
    if !(1..=MAX_LEASE_MONTHS).contains(&l.months) {
        return Err(DomainError::invalid(
            "months",
            "invalid_value",
            format!("months must be from 1 to {MAX_LEASE_MONTHS}"),
        ));
    }
    if l.monthly_rent.checked_mul(l.months).is_none() {
        return Err(DomainError::invalid(
            "monthly_rent",
            "invalid_value",
            "monthly_rent × months exceeds the largest amount coupond accepts",
        ));
    }
    Ok(Lease {
        monthly_rent: l.monthly_rent,
        // Within 1..=120, checked above.
        months: l.months as u32,
    })
}

impl Order {
    /// `unit_price × quantity` of every line, by line index.
    pub fn amounts(&self) -> &[Money] {
        &self.amounts
    }

    /// The sum of every line's amount, before any discount.
    pub fn total(&self) -> Money {
        self.total
    }

    pub fn lease(&self) -> Option<Lease> {
        self.lease
    }

    pub fn draft(&self) -> &OrderDraft {
        &self.draft
    }

    /// The merchant of every line, when all are one merchant's (an order across merchants
    /// has none).
    pub fn sole_merchant(&self) -> Option<MerchantId> {
        let first = self.draft.lines.first()?.merchant_id;
        self.draft
            .lines
            .iter()
            .all(|l| l.merchant_id == first)
            .then_some(first)
    }

    /// Indexes of the lines of `listing`.
    pub(crate) fn lines_of_listing(&self, listing: ListingId) -> impl Iterator<Item = usize> + '_ {
        self.by_listing[equal_range(&self.by_listing, listing)]
            .iter()
            .map(|&(_, i)| i)
    }

    /// Indexes of the lines in `category`.
    pub(crate) fn lines_of_category(
        &self,
        category: CategoryId,
    ) -> impl Iterator<Item = usize> + '_ {
        self.by_category[equal_range(&self.by_category, category)]
            .iter()
            .map(|&(_, i)| i)
    }
}

fn equal_range<K: Ord + Copy>(sorted: &[(K, usize)], key: K) -> Range<usize> {
    let start = sorted.partition_point(|&(k, _)| k < key);
    let end = start + sorted[start..].partition_point(|&(k, _)| k == key);
    start..end
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(json: serde_json::Value) -> Result<Order, DomainError> {
        Order::try_from(serde_json::from_value::<OrderDraft>(json).unwrap())
    }

    fn line(extra: serde_json::Value) -> serde_json::Value {
        let mut l = serde_json::json!({
            "listing_id": 1, "merchant_id": 7, "category_id": 3,
            "unit_price": 1000, "quantity": 2, "kind": "item"
        });
        for (k, v) in extra.as_object().unwrap() {
            if v.is_null() {
                l.as_object_mut().unwrap().remove(k);
            } else {
                l[k] = v.clone();
            }
        }
        l
    }

    fn with_lines(lines: Vec<serde_json::Value>) -> serde_json::Value {
        serde_json::json!({"user_id": "u-1", "city_id": 1, "lines": lines})
    }

    #[test]
    fn sole_merchant_is_the_one_of_every_line() {
        let one = order(with_lines(vec![line(serde_json::json!({})); 2])).unwrap();
        assert_eq!(one.sole_merchant(), Some(MerchantId::new(7).unwrap()));
        let two = order(with_lines(vec![
            line(serde_json::json!({})),
            line(serde_json::json!({"merchant_id": 8})),
        ]))
        .unwrap();
        assert_eq!(two.sole_merchant(), None);
    }

    #[test]
    fn computes_amounts_and_indexes() {
        let o = order(with_lines(vec![
            line(serde_json::json!({})),
            line(
                serde_json::json!({"listing_id": null, "product_id": "sku-9", "category_id": 2,
                                    "unit_price": 500, "quantity": 3, "kind": "shipping"}),
            ),
            line(serde_json::json!({"listing_id": 1, "kind": "deposit"})),
        ]))
        .unwrap();
        assert_eq!(
            o.amounts(),
            &[
                Money::new(2000).unwrap(),
                Money::new(1500).unwrap(),
                Money::new(2000).unwrap()
            ]
        );
        assert_eq!(o.total().minor(), 5500);
        let l1: Vec<usize> = o.lines_of_listing(ListingId::new(1).unwrap()).collect();
        assert_eq!(l1, vec![0, 2]);
        let c2: Vec<usize> = o.lines_of_category(CategoryId::new(2).unwrap()).collect();
        assert_eq!(c2, vec![1]);
        assert_eq!(o.lines_of_listing(ListingId::new(99).unwrap()).count(), 0);
        assert_eq!(o.lease(), None);
    }

    #[test]
    fn names_the_offending_field() {
        let field = |json| order(json).unwrap_err().field.unwrap();
        assert_eq!(field(with_lines(vec![])), "lines");
        let many = vec![line(serde_json::json!({})); MAX_LINES + 1];
        assert_eq!(field(with_lines(many)), "lines");
        let mut lines = vec![line(serde_json::json!({})); 4];
        lines[3] = line(serde_json::json!({"quantity": 0}));
        assert_eq!(field(with_lines(lines.clone())), "lines[3].quantity");
        lines[3] = line(serde_json::json!({"quantity": 10_001}));
        assert_eq!(field(with_lines(lines.clone())), "lines[3].quantity");
        lines[3] = line(serde_json::json!({"quantity": -1}));
        assert_eq!(field(with_lines(lines.clone())), "lines[3].quantity");
        lines[3] = line(serde_json::json!({"listing_id": null}));
        assert_eq!(field(with_lines(lines.clone())), "lines[3].listing_id");
        lines[3] = line(serde_json::json!({"product_id": ""}));
        assert_eq!(field(with_lines(lines.clone())), "lines[3].product_id");
        lines[3] = line(serde_json::json!({"product_id": "x".repeat(129)}));
        assert_eq!(field(with_lines(lines.clone())), "lines[3].product_id");
        lines[3] = line(serde_json::json!({"product_id": "x".repeat(128)}));
        assert!(order(with_lines(lines)).is_ok());
        // Overflow of unit_price × quantity is refused, not a panic.
        let huge = line(serde_json::json!({"unit_price": crate::money::MONEY_MAX, "quantity": 2}));
        let e = order(with_lines(vec![huge])).unwrap_err();
        assert_eq!(
            (e.field.as_deref(), e.code),
            (Some("lines[0].quantity"), "invalid_value")
        );
        // Each line fits, the total does not.
        let big = line(serde_json::json!({"unit_price": crate::money::MONEY_MAX, "quantity": 1}));
        assert_eq!(field(with_lines(vec![big.clone(), big])), "lines");
    }

    #[test]
    fn validates_the_lease() {
        let mut o = with_lines(vec![line(serde_json::json!({"kind": "rent"}))]);
        o["lease"] = serde_json::json!({"monthly_rent": 300_000, "months": 12});
        let ok = order(o.clone()).unwrap();
        assert_eq!(
            ok.lease(),
            Some(Lease {
                monthly_rent: Money::new(300_000).unwrap(),
                months: 12
            })
        );
        assert_eq!(ok.lease().unwrap().daily_rent().minor(), 10_000);
        o["lease"]["months"] = serde_json::json!(0);
        assert_eq!(order(o.clone()).unwrap_err().field.unwrap(), "lease.months");
        o["lease"]["months"] = serde_json::json!(121);
        assert_eq!(order(o.clone()).unwrap_err().field.unwrap(), "lease.months");
        o["lease"] = serde_json::json!({"monthly_rent": crate::money::MONEY_MAX, "months": 2});
        assert_eq!(
            order(o.clone()).unwrap_err().field.unwrap(),
            "lease.monthly_rent"
        );
    }

    #[test]
    fn input_json_is_strict() {
        let mut o = with_lines(vec![line(serde_json::json!({}))]);
        o["extra"] = serde_json::json!(1);
        assert!(serde_json::from_value::<OrderDraft>(o).is_err());
        let o = with_lines(vec![line(serde_json::json!({"colour": "red"}))]);
        assert!(serde_json::from_value::<OrderDraft>(o).is_err());
        let o = with_lines(vec![line(serde_json::json!({"kind": "gift"}))]);
        assert!(serde_json::from_value::<OrderDraft>(o).is_err());
        let o = with_lines(vec![line(serde_json::json!({"unit_price": -1}))]);
        assert!(serde_json::from_value::<OrderDraft>(o).is_err());
    }

    #[test]
    fn serializes_as_sent() {
        let json = with_lines(vec![line(serde_json::json!({}))]);
        let o = order(json.clone()).unwrap();
        assert_eq!(serde_json::to_value(&o).unwrap(), json);
        for k in LineKind::ALL {
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
    }
}
