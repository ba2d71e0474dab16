-- Messages outside the app (issue 35; PostgreSQL's 0029, MySQL's 0015): users' contact points
-- and choices, the platform's texts per kind and locale, and the delivery log of email and
-- SMS. See PostgreSQL's migration for what each column holds.
CREATE TABLE contacts (
    user_id     TEXT    PRIMARY KEY,
    email       TEXT,
    phone       TEXT,
    locale      TEXT,
    time_zone   TEXT,
    preferences TEXT    NOT NULL DEFAULT '{}',
    updated_at  INTEGER NOT NULL
) STRICT;

CREATE TABLE message_texts (
    kind       TEXT    NOT NULL,
    locale     TEXT    NOT NULL,
    subject    TEXT    NOT NULL,
    body       TEXT    NOT NULL,
    sms        TEXT    NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (kind, locale)
) STRICT;

CREATE TABLE outbound_messages (
    id         INTEGER PRIMARY KEY,
    channel    TEXT    NOT NULL CHECK (channel IN ('email', 'sms')),
    dedupe_key TEXT    NOT NULL,
    user_id    TEXT,
    kind       TEXT    NOT NULL,
    address    TEXT    NOT NULL,
    time_zone  TEXT    NOT NULL,
    subject    TEXT    NOT NULL,
    body       TEXT    NOT NULL,
    status     TEXT    NOT NULL CHECK (status IN ('queued', 'sent', 'failed')),
    attempts   INTEGER NOT NULL DEFAULT 0,
    next_at    INTEGER NOT NULL,
    answer     TEXT,
    created_at INTEGER NOT NULL,
    sent_at    INTEGER,
    UNIQUE (channel, dedupe_key)
) STRICT;

CREATE INDEX outbound_due ON outbound_messages (channel, next_at) WHERE status = 'queued';
CREATE INDEX outbound_by_user ON outbound_messages (user_id, id);

-- A reminder's day is the recipient's local day: the instants it spans are kept with it (see
-- PostgreSQL's 0029). Reminders planned before were UTC days.
ALTER TABLE reminders ADD COLUMN span_start INTEGER NOT NULL DEFAULT 0;
ALTER TABLE reminders ADD COLUMN span_end INTEGER NOT NULL DEFAULT 0;
UPDATE reminders SET span_start = day * 86400000000, span_end = (day + 1) * 86400000000;
