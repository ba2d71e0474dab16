-- Bulk tag uploads, worked as jobs like issuances (SQLite's 0017): the valid pairs are stored
-- with the job and added a chunk per transaction together with the job's progress.
CREATE TABLE tag_uploads (
    id              BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    actor           VARCHAR(255) NOT NULL,
    state           VARCHAR(64)  NOT NULL CHECK (state IN ('pending', 'running', 'done')),
    pairs           LONGBLOB     NOT NULL, -- `user_id,tag` per line, in file order
    line_count      BIGINT       NOT NULL, -- lines with something on them
    requested       BIGINT       NOT NULL, -- valid pairs
    next_pair       BIGINT       NOT NULL DEFAULT 0, -- pairs before this one are done
    added           BIGINT       NOT NULL DEFAULT 0,
    present         BIGINT       NOT NULL DEFAULT 0, -- already held, or repeated in the file
    over_limit      BIGINT       NOT NULL DEFAULT 0, -- the user already held 100 tags
    invalid         BIGINT       NOT NULL DEFAULT 0, -- lines that are not a pair
    invalid_lines   LONGTEXT     NOT NULL, -- JSON: the first 100 invalid lines with their numbers
    created_at      BIGINT       NOT NULL,
    started_at      BIGINT,
    finished_at     BIGINT,
    idempotency_key VARCHAR(768), -- the upload's scoped Idempotency-Key (NULLs are distinct)
    key_fingerprint BLOB          -- SHA-256 of that upload's bytes
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX tag_uploads_open ON tag_uploads (state, id);
CREATE UNIQUE INDEX tag_uploads_by_key ON tag_uploads (idempotency_key);
