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

-- Singleton loops (scheduler, dispatcher) hold a lease; another instance takes over when it
-- lapses.
CREATE TABLE leases (
    name   TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    until  INTEGER NOT NULL
) STRICT;

-- How far each durable consumer of the outbox has got (its last event).
CREATE TABLE sink_progress (
    sink     TEXT PRIMARY KEY,
    txid     INTEGER NOT NULL,
    event_id INTEGER NOT NULL
) STRICT;

-- One reminder per (user, template, day): a user holding several coupons of a template that
-- expire on one day gets one message.
CREATE TABLE reminders (
    user_id     TEXT NOT NULL,
    template_id INTEGER NOT NULL REFERENCES templates (id),
    day         INTEGER NOT NULL, -- days since 1970-01-01 (UTC) of the coupons' expiry
    due_at      INTEGER NOT NULL,
    PRIMARY KEY (user_id, template_id, day)
) STRICT, WITHOUT ROWID;

CREATE INDEX reminders_due ON reminders (due_at);

-- Inbox: the text once (per template and kind, or per issuance), a row per user.
CREATE TABLE message_contents (
    id         INTEGER PRIMARY KEY,
    key        TEXT NOT NULL UNIQUE,
    kind       TEXT NOT NULL,
    title      TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE messages (
    id         INTEGER PRIMARY KEY,
    user_id    TEXT NOT NULL,
    content_id INTEGER NOT NULL REFERENCES message_contents (id),
    source     TEXT NOT NULL, -- what caused it (an event, a reminder): one message per source
    created_at INTEGER NOT NULL,
    read_at    INTEGER,
    UNIQUE (user_id, source)
) STRICT;

CREATE INDEX messages_unread_first ON messages (user_id, (read_at IS NOT NULL), id);
