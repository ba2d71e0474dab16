-- Orders paid without a coupon (issue 36; PostgreSQL's 0033, SQLite's 0031): see PostgreSQL's
-- migration for what the columns hold. MariaDB has no partial indexes, so every order would
-- sit in an index of its own here: the platform's orders without a coupon are found through
-- `orders_by_end (state, ended_at)` instead (they are confirmed), and only one merchant's get
-- an index (rows of locks sit in it under a NULL merchant).
ALTER TABLE orders ADD COLUMN plain SMALLINT NOT NULL DEFAULT 0,
                   ADD COLUMN merchant_id BIGINT NULL;

CREATE INDEX orders_plain_by_merchant ON orders (merchant_id, ended_at);
