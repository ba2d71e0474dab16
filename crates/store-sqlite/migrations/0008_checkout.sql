-- Checkout: try/confirm/cancel redemption keyed by the order id (TCC).
--
-- A lock holds coupons for one order until a deadline and reserves the discount it plans
-- against each template's budget; confirm turns the reservation into discount given and the
-- coupons into used ones; cancel or the deadline gives both back. Every step is conditional
-- on the order's state, in one transaction, so each lock ends exactly once (I3).

ALTER TABLE templates ADD COLUMN used INTEGER NOT NULL DEFAULT 0 CHECK (used >= 0);
ALTER TABLE templates ADD COLUMN given INTEGER NOT NULL DEFAULT 0 CHECK (given >= 0);
ALTER TABLE templates ADD COLUMN reserved INTEGER NOT NULL DEFAULT 0 CHECK (reserved >= 0);

ALTER TABLE coupons ADD COLUMN order_id TEXT;        -- the order holding or having used it
ALTER TABLE coupons ADD COLUMN locked_until INTEGER; -- while locked: the lock's deadline
ALTER TABLE coupons ADD COLUMN discount INTEGER;     -- planned at lock, final at confirm
ALTER TABLE coupons ADD COLUMN used_at INTEGER;

CREATE INDEX coupons_by_order ON coupons (order_id) WHERE order_id IS NOT NULL;

CREATE TABLE orders (
    order_id    TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('locked', 'confirmed', 'cancelled', 'expired')),
    fingerprint BLOB NOT NULL, -- SHA-256 of the lock request, to tell a retry from a conflict
    deadline    INTEGER NOT NULL,
    answer      TEXT NOT NULL, -- the lock's answer (JSON), replayed to a retried lock
    created_at  INTEGER NOT NULL,
    ended_at    INTEGER
) STRICT;

CREATE INDEX orders_locked_by_deadline ON orders (deadline) WHERE state = 'locked';

-- Idempotency keys of every write route but claims (whose keys live in claim_keys, in the
-- claim's transaction): the first answer, replayed to retries until `expires_at`.
CREATE TABLE idempotency (
    key          TEXT PRIMARY KEY, -- scope (principal and route) and the caller's key
    fingerprint  BLOB NOT NULL,    -- SHA-256 of the method, path and body
    status       INTEGER,          -- NULL while the first request is running
    content_type TEXT,
    body         BLOB,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
) STRICT;

CREATE INDEX idempotency_by_expiry ON idempotency (expires_at);
