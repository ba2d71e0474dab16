-- Bulk issuance: a job issues coupons of a template to a list of users, in chunks, each chunk
-- in one transaction with the job's progress (`next_user`), so a crash loses nothing and a
-- restart issues nothing twice.

ALTER TABLE coupons ADD COLUMN issuance_id INTEGER; -- the job that issued it, if one did

CREATE TABLE issuances (
    id            INTEGER PRIMARY KEY,
    template_id   INTEGER NOT NULL REFERENCES templates (id),
    actor         TEXT NOT NULL,
    state         TEXT NOT NULL CHECK (state IN ('pending', 'running', 'done', 'failed')),
    users         BLOB NOT NULL, -- the valid, distinct user ids, one per line
    requested     INTEGER NOT NULL, -- how many
    next_user     INTEGER NOT NULL DEFAULT 0, -- users before this one are done
    issued        INTEGER NOT NULL DEFAULT 0,
    skipped       INTEGER NOT NULL DEFAULT 0, -- the user already holds the per-user limit
    sold_out      INTEGER NOT NULL DEFAULT 0,
    not_eligible  INTEGER NOT NULL DEFAULT 0, -- outside the template's audience
    duplicates    INTEGER NOT NULL DEFAULT 0, -- repeated lines, counted once
    invalid       INTEGER NOT NULL DEFAULT 0, -- lines that are not a user id
    invalid_lines TEXT NOT NULL, -- JSON: the first 100 invalid lines with their numbers
    error         TEXT,
    created_at    INTEGER NOT NULL,
    started_at    INTEGER,
    finished_at   INTEGER
) STRICT;

CREATE INDEX issuances_open ON issuances (id) WHERE state IN ('pending', 'running');
CREATE INDEX issuances_by_template ON issuances (template_id, id);
