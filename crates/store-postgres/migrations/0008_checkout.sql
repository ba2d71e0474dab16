-- Checkout: try/confirm/cancel redemption keyed by the order id (TCC).
--
-- A lock holds coupons for one order until a deadline and reserves the discount it plans
-- against each template's budget; confirm turns the reservation into discount given and the
-- coupons into used ones; cancel or the deadline gives both back. Every step is conditional
-- on the order's state, in one transaction, so each lock ends exactly once (I3).

ALTER TABLE templates ADD COLUMN used BIGINT NOT NULL DEFAULT 0 CHECK (used >= 0);
ALTER TABLE templates ADD COLUMN given BIGINT NOT NULL DEFAULT 0 CHECK (given >= 0);
ALTER TABLE templates ADD COLUMN reserved BIGINT NOT NULL DEFAULT 0 CHECK (reserved >= 0);

ALTER TABLE coupons ADD COLUMN order_id TEXT;        -- the order holding or having used it
ALTER TABLE coupons ADD COLUMN locked_until TIMESTAMPTZ; -- while locked: the lock's deadline
ALTER TABLE coupons ADD COLUMN discount BIGINT;      -- planned at lock, final at confirm
ALTER TABLE coupons ADD COLUMN used_at TIMESTAMPTZ;

CREATE INDEX coupons_by_order ON coupons (order_id) WHERE order_id IS NOT NULL;

CREATE TABLE orders (
    order_id    TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('locked', 'confirmed', 'cancelled', 'expired')),
    fingerprint BYTEA NOT NULL, -- SHA-256 of the lock request, to tell a retry from a conflict
    deadline    TIMESTAMPTZ NOT NULL,
    answer      JSONB NOT NULL, -- the lock's answer (JSON), replayed to a retried lock
    created_at  TIMESTAMPTZ NOT NULL,
    ended_at    TIMESTAMPTZ
);

CREATE INDEX orders_locked_by_deadline ON orders (deadline) WHERE state = 'locked';

-- Idempotency keys of every write route but claims (whose keys live in claim_keys, in the
-- claim's transaction): the first answer, replayed to retries until `expires_at`.
CREATE TABLE idempotency (
    key          TEXT PRIMARY KEY, -- scope (principal and route) and the caller's key
    fingerprint  BYTEA NOT NULL,   -- SHA-256 of the method, path and body
    status       INTEGER,          -- NULL while the first request is running
    content_type TEXT,
    body         BYTEA,
    created_at   TIMESTAMPTZ NOT NULL,
    expires_at   TIMESTAMPTZ NOT NULL
);

CREATE INDEX idempotency_by_expiry ON idempotency (expires_at);
