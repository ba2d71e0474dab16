-- Operators' campaign messages (issue 35; SQLite's 0029, MySQL's 0017): a title and message
-- about a template, sent by a background worker to the template's holders or to a segment
-- (segment: the JSON of {"any": [...], "active_within_days": N}; NULL: the holders).
-- next_after is where the next page of recipients starts (a coupon id for holders, a user id
-- for a segment), so a restart goes on where the last one stopped; finished_at is set once
-- the last page is queued. An owner (the merchant that sends it, 0 for the platform) may record
-- messages.campaigns_per_owner_per_day per local day, counted by created_at.
CREATE TABLE campaign_messages (
    id          BIGSERIAL   PRIMARY KEY,
    template_id BIGINT      NOT NULL,
    owner       BIGINT      NOT NULL,
    actor       TEXT        NOT NULL,
    title       TEXT        NOT NULL,
    message     TEXT        NOT NULL,
    segment     TEXT,
    next_after  TEXT,
    recipients  BIGINT      NOT NULL DEFAULT 0,
    queued      BIGINT      NOT NULL DEFAULT 0,
    created_at  TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ
);

CREATE INDEX campaign_messages_by_owner ON campaign_messages (owner, created_at);
CREATE INDEX campaign_messages_by_template ON campaign_messages (template_id, id);
CREATE INDEX campaign_messages_sending ON campaign_messages (id) WHERE finished_at IS NULL;

-- A campaign message's holders are read a page at a time by user id, from the template's
-- coupons: the template's index orders them so (MariaDB's has since its first migration). The
-- same entries as before, each a user id longer.
DROP INDEX coupons_by_template;
CREATE INDEX coupons_by_template ON coupons (template_id, user_id);
