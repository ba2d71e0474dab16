-- Bulk tag uploads, worked as jobs like issuances (SQLite's 0017): the valid pairs are stored
-- with the job and added a chunk per transaction together with the job's progress.
CREATE TABLE tag_uploads (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    actor           TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'running', 'done')),
    pairs           BYTEA NOT NULL, -- `user_id,tag` per line, in file order
    line_count      BIGINT NOT NULL, -- lines with something on them
    requested       BIGINT NOT NULL, -- valid pairs
    next_pair       BIGINT NOT NULL DEFAULT 0, -- pairs before this one are done
    added           BIGINT NOT NULL DEFAULT 0,
    present         BIGINT NOT NULL DEFAULT 0, -- already held, or repeated in the file
    over_limit      BIGINT NOT NULL DEFAULT 0, -- the user already held 100 tags
    invalid         BIGINT NOT NULL DEFAULT 0, -- lines that are not a pair
    invalid_lines   TEXT NOT NULL, -- JSON: the first 100 invalid lines with their numbers
    created_at      TIMESTAMPTZ NOT NULL,
    started_at      TIMESTAMPTZ,
    finished_at     TIMESTAMPTZ,
    idempotency_key TEXT, -- the upload's scoped Idempotency-Key (NULLs are distinct)
    key_fingerprint BYTEA -- SHA-256 of that upload's bytes
);

CREATE INDEX tag_uploads_open ON tag_uploads (id) WHERE state IN ('pending', 'running');
CREATE UNIQUE INDEX tag_uploads_by_key ON tag_uploads (idempotency_key);
