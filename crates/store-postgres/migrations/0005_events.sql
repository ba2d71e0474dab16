-- The coupon operation log (seed `t_coupon_opt_record`) and the event outbox. Both are
-- written in the transaction that makes the change they record, so neither can disagree
-- with the coupons: a committed claim has its log row and its event; a rolled-back one has
-- neither.

CREATE TABLE coupon_events (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    coupon_id   BIGINT NOT NULL REFERENCES coupons (id),
    from_status TEXT, -- NULL when the change created the coupon
    to_status   TEXT NOT NULL,
    order_id    TEXT,
    actor       TEXT NOT NULL, -- platform | merchant:<id> | service | user:<id> | system
    at          TIMESTAMPTZ NOT NULL
);

CREATE INDEX coupon_events_by_coupon ON coupon_events (coupon_id, id);

-- Events for observers and external sinks. Ids come from a sequence, so with concurrent
-- writers a smaller id can commit after a larger one; readers of the outbox account for that
-- (see the dispatcher).
CREATE TABLE outbox (
    id   BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind TEXT NOT NULL,
    at   TIMESTAMPTZ NOT NULL,
    body JSONB NOT NULL
);
