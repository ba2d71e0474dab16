-- Bulk tag uploads, worked as jobs like issuances: the valid pairs are stored with the job and
-- added a chunk per transaction together with the job's progress (`next_pair`), so a crash
-- loses nothing and a restart adds nothing twice (adding a held tag is a no-op anyway).
CREATE TABLE tag_uploads (
    id              INTEGER PRIMARY KEY,
    actor           TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'running', 'done')),
    pairs           BLOB NOT NULL, -- `user_id,tag` per line, in file order
    line_count      INTEGER NOT NULL, -- lines with something on them
    requested       INTEGER NOT NULL, -- valid pairs
    next_pair       INTEGER NOT NULL DEFAULT 0, -- pairs before this one are done
    added           INTEGER NOT NULL DEFAULT 0,
    present         INTEGER NOT NULL DEFAULT 0, -- already held, or repeated in the file
    over_limit      INTEGER NOT NULL DEFAULT 0, -- the user already held 100 tags
    invalid         INTEGER NOT NULL DEFAULT 0, -- lines that are not a pair
    invalid_lines   TEXT NOT NULL, -- JSON: the first 100 invalid lines with their numbers
    created_at      INTEGER NOT NULL,
    started_at      INTEGER,
    finished_at     INTEGER,
    idempotency_key TEXT, -- the upload's scoped Idempotency-Key (NULLs are distinct)
    key_fingerprint BLOB  -- SHA-256 of that upload's bytes
) STRICT;

CREATE INDEX tag_uploads_open ON tag_uploads (id) WHERE state IN ('pending', 'running');
CREATE UNIQUE INDEX tag_uploads_by_key ON tag_uploads (idempotency_key);
