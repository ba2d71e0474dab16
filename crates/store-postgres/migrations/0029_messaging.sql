-- Messages outside the app (issue 35; SQLite's 0027, MySQL's 0015).
--
-- `contacts`: where a user can be reached (email, E.164 phone), the locale texts are chosen
-- by, the user's IANA time zone, and their choices of marketing messages per channel (JSON,
-- `{"email": {"coupon_expiring": false}}`). The service writes it; a user writes only its own
-- preferences; an unsubscribe link turns a channel's marketing off.
CREATE TABLE contacts (
    user_id     TEXT        PRIMARY KEY,
    email       TEXT,
    phone       TEXT,
    locale      TEXT,
    time_zone   TEXT,
    preferences TEXT        NOT NULL DEFAULT '{}',
    updated_at  TIMESTAMPTZ NOT NULL
);

-- The platform's own texts per message kind and locale; a pair without a row uses the text
-- coupond ships (English and Simplified Chinese).
CREATE TABLE message_texts (
    kind       TEXT        NOT NULL,
    locale     TEXT        NOT NULL,
    subject    TEXT        NOT NULL,
    body       TEXT        NOT NULL,
    sms        TEXT        NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (kind, locale)
);

-- Every message for an outside channel, rendered when queued, and its fate: `queued` (due at
-- `next_at`, after `attempts` tries), `sent` (`sent_at`, the provider's answer) or `failed`
-- (the provider's last answer). `(channel, dedupe_key)` is unique: the event or reminder a
-- message comes from queues it once however often it is handed out.
CREATE TABLE outbound_messages (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    channel    TEXT        NOT NULL CHECK (channel IN ('email', 'sms')),
    dedupe_key TEXT        NOT NULL,
    user_id    TEXT,
    kind       TEXT        NOT NULL,
    address    TEXT        NOT NULL,
    time_zone  TEXT        NOT NULL,
    subject    TEXT        NOT NULL,
    body       TEXT        NOT NULL,
    status     TEXT        NOT NULL CHECK (status IN ('queued', 'sent', 'failed')),
    attempts   INTEGER     NOT NULL DEFAULT 0,
    next_at    TIMESTAMPTZ NOT NULL,
    answer     TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    sent_at    TIMESTAMPTZ,
    UNIQUE (channel, dedupe_key)
);

-- What a channel's courier sends next.
CREATE INDEX outbound_due ON outbound_messages (channel, next_at) WHERE status = 'queued';
-- A user's messages, newest first (the delivery log, support).
CREATE INDEX outbound_by_user ON outbound_messages (user_id, id);

-- A reminder's day is the recipient's local day (their zone, else the platform's): the
-- instants that day spans are kept with it, so "a coupon expiring that day" is asked in the
-- zone it was planned in. Reminders planned before were UTC days.
ALTER TABLE reminders ADD COLUMN span_start TIMESTAMPTZ;
ALTER TABLE reminders ADD COLUMN span_end TIMESTAMPTZ;
UPDATE reminders SET span_start = to_timestamp(day * 86400), span_end = to_timestamp((day + 1) * 86400);
ALTER TABLE reminders ALTER COLUMN span_start SET NOT NULL;
ALTER TABLE reminders ALTER COLUMN span_end SET NOT NULL;
