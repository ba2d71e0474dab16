-- Bulk issuance: a job issues coupons of a template to a list of users, in chunks, each chunk
-- in one transaction with the job's progress (`next_user`), so a crash loses nothing and a
-- restart issues nothing twice.

ALTER TABLE coupons ADD COLUMN issuance_id BIGINT; -- the job that issued it, if one did

CREATE TABLE issuances (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    template_id   BIGINT NOT NULL REFERENCES templates (id),
    actor         TEXT NOT NULL,
    state         TEXT NOT NULL CHECK (state IN ('pending', 'running', 'done', 'failed')),
    users         BYTEA NOT NULL, -- the valid, distinct user ids, one per line
    requested     BIGINT NOT NULL, -- how many
    next_user     BIGINT NOT NULL DEFAULT 0, -- users before this one are done
    issued        BIGINT NOT NULL DEFAULT 0,
    skipped       BIGINT NOT NULL DEFAULT 0, -- the user already holds the per-user limit
    sold_out      BIGINT NOT NULL DEFAULT 0,
    not_eligible  BIGINT NOT NULL DEFAULT 0, -- outside the template's audience
    duplicates    BIGINT NOT NULL DEFAULT 0, -- repeated lines, counted once
    invalid       BIGINT NOT NULL DEFAULT 0, -- lines that are not a user id
    invalid_lines TEXT NOT NULL, -- JSON: the first 100 invalid lines with their numbers
    error         TEXT,
    created_at    TIMESTAMPTZ NOT NULL,
    started_at    TIMESTAMPTZ,
    finished_at   TIMESTAMPTZ
);

CREATE INDEX issuances_open ON issuances (id) WHERE state IN ('pending', 'running');
CREATE INDEX issuances_by_template ON issuances (template_id, id);
