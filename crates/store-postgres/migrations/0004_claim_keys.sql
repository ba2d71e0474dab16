-- Idempotency keys of claims: a key is recorded with the coupon it issued, in the claim's
-- transaction, so a retry finds that coupon and never gets a second one (I4).
CREATE TABLE claim_keys (
    key         TEXT PRIMARY KEY, -- scope (principal and route) and the caller's key
    fingerprint BYTEA NOT NULL,    -- SHA-256 of what was asked (template and user)
    coupon_id   BIGINT REFERENCES coupons (id),
    created_at  TIMESTAMPTZ NOT NULL
);
