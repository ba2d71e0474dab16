-- The scheduler, the outbox's consumers, inbox and reminders.
--
-- Statuses are computed from the clock; `announced` is the last status the scheduler emitted
-- an event for ('none' before the first). It moves only forward, in the transaction that
-- writes the events, and only from the value the scheduler read: each transition is
-- announced once, even with several schedulers.

ALTER TABLE activities ADD COLUMN announced TEXT NOT NULL DEFAULT 'none';
ALTER TABLE templates ADD COLUMN announced TEXT NOT NULL DEFAULT 'none';

CREATE INDEX templates_due_start ON templates (announced, claim_start);
CREATE INDEX templates_due_end ON templates (announced, claim_end);
CREATE INDEX templates_due_expiry ON templates (announced, expires_at);
CREATE INDEX templates_aborted ON templates (aborted_at) WHERE aborted_at IS NOT NULL;
CREATE INDEX coupons_unused_by_expiry ON coupons (valid_until) WHERE status = 'unused';

-- Outbox ids come from a sequence, so a smaller id can commit after a larger one. Readers
-- take only events of transactions older than every transaction still running (below the
-- snapshot's xmin), in (txid, id) order: none can appear later behind their position.
ALTER TABLE outbox ADD COLUMN txid BIGINT NOT NULL DEFAULT pg_current_xact_id()::text::bigint;
CREATE INDEX outbox_by_txid ON outbox (txid, id);

CREATE TABLE leases (
    name   TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    until  TIMESTAMPTZ NOT NULL
);

CREATE TABLE sink_progress (
    sink     TEXT PRIMARY KEY,
    txid     BIGINT NOT NULL,
    event_id BIGINT NOT NULL
);

CREATE TABLE reminders (
    user_id     TEXT NOT NULL,
    template_id BIGINT NOT NULL REFERENCES templates (id),
    day         BIGINT NOT NULL, -- days since 1970-01-01 (UTC) of the coupons' expiry
    due_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (user_id, template_id, day)
);

CREATE INDEX reminders_due ON reminders (due_at);

CREATE TABLE message_contents (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key        TEXT NOT NULL UNIQUE,
    kind       TEXT NOT NULL,
    title      TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE messages (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id    TEXT NOT NULL,
    content_id BIGINT NOT NULL REFERENCES message_contents (id),
    source     TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    read_at    TIMESTAMPTZ,
    UNIQUE (user_id, source)
);

CREATE INDEX messages_unread_first ON messages (user_id, (read_at IS NOT NULL), id);
