-- Orders paid without a coupon (issue 36; PostgreSQL's 0033, SQLite's 0031): see PostgreSQL's
-- migration for what the columns hold. MariaDB has no partial indexes: rows of locks sit in
-- these indexes under `plain = 0` (and a NULL merchant), apart from the ones read.
ALTER TABLE orders ADD COLUMN plain SMALLINT NOT NULL DEFAULT 0,
                   ADD COLUMN merchant_id BIGINT NULL;

CREATE INDEX orders_plain_by_end ON orders (plain, ended_at);
CREATE INDEX orders_plain_by_merchant ON orders (merchant_id, ended_at);
