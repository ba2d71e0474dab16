-- Operators' campaign messages (issue 35; PostgreSQL's 0031, MySQL's 0017). See PostgreSQL's
-- migration for what each column holds.
CREATE TABLE campaign_messages (
    id          INTEGER PRIMARY KEY,
    template_id INTEGER NOT NULL,
    owner       INTEGER NOT NULL,
    actor       TEXT    NOT NULL,
    title       TEXT    NOT NULL,
    message     TEXT    NOT NULL,
    segment     TEXT,
    next_after  TEXT,
    recipients  INTEGER NOT NULL DEFAULT 0,
    queued      INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    finished_at INTEGER
) STRICT;

CREATE INDEX campaign_messages_by_owner ON campaign_messages (owner, created_at);
CREATE INDEX campaign_messages_by_template ON campaign_messages (template_id, id);
CREATE INDEX campaign_messages_sending ON campaign_messages (id) WHERE finished_at IS NULL;

-- A campaign message's holders are read a page at a time by user id, from the template's
-- coupons: the template's index orders them so (MariaDB's has since its first migration). The
-- same entries as before, each a user id longer.
DROP INDEX coupons_by_template;
CREATE INDEX coupons_by_template ON coupons (template_id, user_id);
