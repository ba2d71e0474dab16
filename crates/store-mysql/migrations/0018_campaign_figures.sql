-- Campaign figures (issue 36; PostgreSQL's 0032, SQLite's 0030): each coupon's channel and
-- source, each order's value at its lock and what refunds took back. See PostgreSQL's
-- migration for what each column holds.
ALTER TABLE coupons ADD COLUMN channel VARCHAR(80) NOT NULL DEFAULT 'direct',
                    ADD COLUMN source VARCHAR(64) NULL;
UPDATE coupons SET channel = CONCAT('issuance:', issuance_id) WHERE issuance_id IS NOT NULL;
UPDATE coupons c JOIN codes k ON k.code = c.code
   SET c.channel = CONCAT('code:', COALESCE(CAST(k.batch_id AS CHAR), 'shared'))
 WHERE c.issuance_id IS NULL;

ALTER TABLE orders ADD COLUMN subtotal BIGINT NULL,
                   ADD COLUMN discount BIGINT NULL,
                   ADD COLUMN currency VARCHAR(3) NULL,
                   ADD COLUMN refunded_discount BIGINT NOT NULL DEFAULT 0,
                   ADD COLUMN refunded_at BIGINT NULL;

CREATE INDEX orders_by_end ON orders (state, ended_at);
CREATE INDEX orders_by_refund ON orders (refunded_at);

-- The performance report's closed hours, kept once counted (see PostgreSQL's migration).
CREATE TABLE figure_hours (
    scope             VARCHAR(80) NOT NULL,
    hour              BIGINT NOT NULL,
    channel           VARCHAR(80) NOT NULL,
    digest            VARCHAR(80) NOT NULL,
    issued            BIGINT NOT NULL,
    claimed           BIGINT NOT NULL,
    locked            BIGINT NOT NULL,
    used              BIGINT NOT NULL,
    refunded          BIGINT NOT NULL,
    revoked           BIGINT NOT NULL,
    discount          BIGINT NOT NULL,
    refunded_discount BIGINT NOT NULL,
    orders            BIGINT NOT NULL,
    order_value       BIGINT NOT NULL,
    order_discount    BIGINT NOT NULL,
    orders_refunded   BIGINT NOT NULL,
    refunded_value    BIGINT NOT NULL,
    PRIMARY KEY (scope, hour, channel)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE figure_spans (
    scope VARCHAR(80) NOT NULL,
    hour  BIGINT NOT NULL,
    digest VARCHAR(80) NOT NULL,
    PRIMARY KEY (scope, hour)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
