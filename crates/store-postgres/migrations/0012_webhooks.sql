-- Webhooks: endpoints that receive signed events, and each delivery with its attempts.
-- A delivery is queued once per (webhook, event), so redelivering the outbox to the fan-out
-- queues nothing twice.

CREATE TABLE webhooks (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    merchant_id BIGINT REFERENCES merchants (id), -- NULL: the platform's
    url         TEXT NOT NULL,
    secret      TEXT NOT NULL, -- signs each delivery (HMAC-SHA256); shown once at creation
    event_types TEXT NOT NULL, -- JSON array of event types, or ["*"]
    created_at  TIMESTAMPTZ NOT NULL,
    disabled_at TIMESTAMPTZ
);

CREATE TABLE webhook_deliveries (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    webhook_id   BIGINT NOT NULL REFERENCES webhooks (id),
    event_id     BIGINT NOT NULL,
    event_type   TEXT NOT NULL,
    payload      TEXT NOT NULL, -- the JSON body sent, the same on every attempt
    state        TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts     BIGINT NOT NULL DEFAULT 0,
    next_at      TIMESTAMPTZ NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    delivered_at TIMESTAMPTZ,
    UNIQUE (webhook_id, event_id)
);

CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at) WHERE state = 'pending';

CREATE TABLE webhook_attempts (
    delivery_id BIGINT NOT NULL REFERENCES webhook_deliveries (id),
    attempt     BIGINT NOT NULL,
    at          TIMESTAMPTZ NOT NULL,
    status      BIGINT, -- the receiver's HTTP status; NULL when there was no answer
    error       TEXT,
    PRIMARY KEY (delivery_id, attempt)
);
