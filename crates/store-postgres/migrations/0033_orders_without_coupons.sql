-- Orders paid without a coupon (issue 36): the order service records them
-- (`POST /v1/orders/{order_id}/record`) so the performance report can set the average order
-- value with a coupon beside the one without. Such an order is an `orders` row, confirmed at
-- once, with `plain = 1`, no coupons, a discount of 0 and, when every line is one merchant's,
-- that `merchant_id` (a merchant's report compares against its own orders). Rows of locks
-- keep `plain = 0` and no merchant. Keeping them in `orders` makes the order id one namespace:
-- a lock of a recorded order id, or a record of a locked one, is a conflict.
ALTER TABLE orders ADD COLUMN plain SMALLINT NOT NULL DEFAULT 0;
ALTER TABLE orders ADD COLUMN merchant_id BIGINT;

-- The report reads them by the hour they were recorded, the platform's or one merchant's.
CREATE INDEX orders_plain_by_end ON orders (ended_at) WHERE plain = 1;
CREATE INDEX orders_plain_by_merchant ON orders (merchant_id, ended_at) WHERE plain = 1;
