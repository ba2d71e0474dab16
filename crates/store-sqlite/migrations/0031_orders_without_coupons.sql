-- Orders paid without a coupon (issue 36; PostgreSQL's 0033, MySQL's 0019): see PostgreSQL's
-- migration for what the columns hold.
ALTER TABLE orders ADD COLUMN plain INTEGER NOT NULL DEFAULT 0;
ALTER TABLE orders ADD COLUMN merchant_id INTEGER;

CREATE INDEX orders_plain_by_end ON orders (ended_at) WHERE plain = 1;
CREATE INDEX orders_plain_by_merchant ON orders (merchant_id, ended_at) WHERE plain = 1;
