-- The coupon operation log (seed `t_coupon_opt_record`) and the event outbox. Both are
-- written in the transaction that makes the change they record, so neither can disagree
-- with the coupons: a committed claim has its log row and its event; a rolled-back one has
-- neither.

CREATE TABLE coupon_events (
    id          INTEGER PRIMARY KEY,
    coupon_id   INTEGER NOT NULL REFERENCES coupons (id),
    from_status TEXT, -- NULL when the change created the coupon
    to_status   TEXT NOT NULL,
    order_id    TEXT,
    actor       TEXT NOT NULL, -- platform | merchant:<id> | service | user:<id> | system
    at          INTEGER NOT NULL
) STRICT;

CREATE INDEX coupon_events_by_coupon ON coupon_events (coupon_id, id);

-- Events for observers and external sinks, in commit order (one writer: ids grow in commit
-- order). `body` is JSON.
CREATE TABLE outbox (
    id   INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    at   INTEGER NOT NULL,
    body TEXT NOT NULL
) STRICT;
