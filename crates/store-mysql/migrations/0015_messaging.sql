-- Messages outside the app (issue 35; PostgreSQL's 0029, SQLite's 0027): users' contact points
-- and choices, the platform's texts per kind and locale, and the delivery log of email and
-- SMS. See PostgreSQL's migration for what each column holds. MySQL has no partial index: the
-- due index names the status first.
CREATE TABLE contacts (
    user_id     VARCHAR(255) NOT NULL PRIMARY KEY,
    email       VARCHAR(254),
    phone       VARCHAR(32),
    locale      VARCHAR(35),
    time_zone   VARCHAR(64),
    preferences TEXT         NOT NULL,
    updated_at  BIGINT       NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE message_texts (
    kind       VARCHAR(32) NOT NULL,
    locale     VARCHAR(35) NOT NULL,
    subject    TEXT        NOT NULL,
    body       TEXT        NOT NULL,
    sms        TEXT        NOT NULL,
    updated_at BIGINT      NOT NULL,
    PRIMARY KEY (kind, locale)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE outbound_messages (
    id         BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    channel    VARCHAR(8)   NOT NULL,
    dedupe_key VARCHAR(255) NOT NULL,
    user_id    VARCHAR(255),
    kind       VARCHAR(32)  NOT NULL,
    address    VARCHAR(254) NOT NULL,
    time_zone  VARCHAR(64)  NOT NULL,
    subject    TEXT         NOT NULL,
    body       TEXT         NOT NULL,
    status     VARCHAR(8)   NOT NULL,
    attempts   INT          NOT NULL DEFAULT 0,
    next_at    BIGINT       NOT NULL,
    answer     TEXT,
    created_at BIGINT       NOT NULL,
    sent_at    BIGINT,
    UNIQUE KEY outbound_key (channel, dedupe_key),
    CONSTRAINT outbound_channel CHECK (channel IN ('email', 'sms')),
    CONSTRAINT outbound_status CHECK (status IN ('queued', 'sent', 'failed'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX outbound_due ON outbound_messages (channel, status, next_at);
CREATE INDEX outbound_by_user ON outbound_messages (user_id, id);

-- A reminder's day is the recipient's local day: the instants it spans are kept with it (see
-- PostgreSQL's 0029). Reminders planned before were UTC days.
ALTER TABLE reminders ADD COLUMN span_start BIGINT NOT NULL DEFAULT 0, ADD COLUMN span_end BIGINT NOT NULL DEFAULT 0;
UPDATE reminders SET span_start = day * 86400000000, span_end = (day + 1) * 86400000000;
