-- The lifecycle after a claim: revoking coupons, refunding used ones, and live changes to
-- claimable templates.
--
-- `coupon_events.reason`: why a change happened when a person said so (a revoke's reason, a
-- refund's). NULL for the changes that explain themselves (claim, lock, use, release, expiry).
ALTER TABLE coupon_events ADD COLUMN reason TEXT;

-- One row per coupon given back by a refund of a confirmed order, written in the refund's
-- transaction and never changed: the reconciliation report counts the use in the period of
-- `used_at` and the refund in the period of `at`, so a period's figures never move once it
-- has passed. `(order_id, coupon_id)` is unique: refunding a coupon of an order twice finds
-- the first refund (a coupon returned to its owner may be used and refunded again in
-- another order).
CREATE TABLE refunds (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id    TEXT    NOT NULL,
    coupon_id   BIGINT NOT NULL REFERENCES coupons (id),
    template_id BIGINT NOT NULL REFERENCES templates (id),
    discount    BIGINT  NOT NULL CHECK (discount >= 0),
    used_at     TIMESTAMPTZ NOT NULL,
    to_status   TEXT    NOT NULL CHECK (to_status IN ('unused', 'expired', 'revoked')),
    actor       TEXT    NOT NULL,
    reason      TEXT,
    at          TIMESTAMPTZ NOT NULL,
    UNIQUE (order_id, coupon_id)
);

CREATE INDEX refunds_by_time ON refunds (at);
CREATE INDEX refunds_by_use ON refunds (used_at);

-- A template's history: every change of its terms after creation (who, when, what), in the
-- transaction that made it. `changes` is JSON: {"field": {"from": ..., "to": ...}, ...}.
CREATE TABLE template_changes (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    template_id BIGINT NOT NULL REFERENCES templates (id),
    actor       TEXT    NOT NULL,
    at          TIMESTAMPTZ NOT NULL,
    changes     JSONB    NOT NULL
);

CREATE INDEX template_changes_by_template ON template_changes (template_id, id);
