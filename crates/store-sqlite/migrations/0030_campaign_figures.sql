-- Campaign figures (issue 36; PostgreSQL's 0032, MySQL's 0018): each coupon's channel and
-- source, each order's value at its lock and what refunds took back. See PostgreSQL's
-- migration for what each column holds.
ALTER TABLE coupons ADD COLUMN channel TEXT NOT NULL DEFAULT 'direct';
ALTER TABLE coupons ADD COLUMN source TEXT;
UPDATE coupons SET channel = 'issuance:' || issuance_id WHERE issuance_id IS NOT NULL;
UPDATE coupons SET channel = 'code:' || COALESCE(
    (SELECT CAST(k.batch_id AS TEXT) FROM codes k WHERE k.code = coupons.code), 'shared')
  WHERE code IS NOT NULL AND issuance_id IS NULL;

ALTER TABLE orders ADD COLUMN subtotal INTEGER;
ALTER TABLE orders ADD COLUMN discount INTEGER;
ALTER TABLE orders ADD COLUMN currency TEXT;
ALTER TABLE orders ADD COLUMN refunded_discount INTEGER NOT NULL DEFAULT 0;
ALTER TABLE orders ADD COLUMN refunded_at INTEGER;

CREATE INDEX orders_by_end ON orders (ended_at) WHERE state = 'confirmed';
CREATE INDEX orders_by_refund ON orders (refunded_at) WHERE refunded_at IS NOT NULL;
-- Unused coupons expiring in a period: those the sweep marked expired, by validity (the
-- still-unused ones have `coupons_unused_by_expiry`).
CREATE INDEX coupons_expired_by_validity ON coupons (valid_until) WHERE status = 'expired';

-- The performance report's closed hours, kept once counted (see PostgreSQL's migration).
CREATE TABLE figure_hours (
    scope             TEXT NOT NULL,
    hour              INTEGER NOT NULL,
    channel           TEXT NOT NULL,
    digest            TEXT NOT NULL,
    issued            INTEGER NOT NULL,
    claimed           INTEGER NOT NULL,
    locked            INTEGER NOT NULL,
    used              INTEGER NOT NULL,
    refunded          INTEGER NOT NULL,
    revoked           INTEGER NOT NULL,
    discount          INTEGER NOT NULL,
    refunded_discount INTEGER NOT NULL,
    orders            INTEGER NOT NULL,
    order_value       INTEGER NOT NULL,
    order_discount    INTEGER NOT NULL,
    orders_refunded   INTEGER NOT NULL,
    refunded_value    INTEGER NOT NULL,
    PRIMARY KEY (scope, hour, channel)
) STRICT;
CREATE TABLE figure_spans (
    scope TEXT NOT NULL,
    hour  INTEGER NOT NULL,
    digest TEXT NOT NULL,
    PRIMARY KEY (scope, hour)
) STRICT;
