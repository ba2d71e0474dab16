-- coupond on SQLite. Instants are INTEGER microseconds since the Unix epoch (UTC).
-- Each record keeps its whole validated draft in `spec` (JSON, see coupond_store::codec) and
-- copies the fields that queries filter on into columns, written from the same spec in the
-- same statement.

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

CREATE TABLE merchants (
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    short_name TEXT NOT NULL,
    cities     TEXT NOT NULL, -- JSON array of city ids, sorted
    created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE api_keys (
    id          INTEGER PRIMARY KEY,
    hash        BLOB NOT NULL UNIQUE, -- SHA-256 of the key; the key itself is never stored
    prefix      TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('platform', 'merchant', 'service')),
    merchant_id INTEGER REFERENCES merchants (id),
    label       TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER,
    CHECK ((role = 'merchant') = (merchant_id IS NOT NULL))
) STRICT;

CREATE TABLE listings (
    id          INTEGER PRIMARY KEY,
    merchant_id INTEGER NOT NULL REFERENCES merchants (id),
    external_id TEXT,
    city_id     INTEGER NOT NULL,
    category_id INTEGER NOT NULL,
    title       TEXT NOT NULL,
    price       INTEGER NOT NULL CHECK (price >= 0),
    deposit     INTEGER NOT NULL CHECK (deposit >= 0),
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    UNIQUE (merchant_id, external_id)
) STRICT;

CREATE TABLE activities (
    id             INTEGER PRIMARY KEY,
    title          TEXT NOT NULL,
    kind           TEXT NOT NULL,
    cities         TEXT NOT NULL, -- JSON array of city ids, sorted
    enroll_start   INTEGER NOT NULL,
    enroll_end     INTEGER NOT NULL,
    run_start      INTEGER NOT NULL,
    run_end        INTEGER NOT NULL,
    spec           TEXT NOT NULL,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    aborted_at     INTEGER,
    version        INTEGER NOT NULL DEFAULT 1,
    enrollment_seq INTEGER NOT NULL DEFAULT 0,
    CHECK (enroll_start < enroll_end AND enroll_end <= run_start AND run_start < run_end)
) STRICT;

CREATE TABLE templates (
    id             INTEGER PRIMARY KEY,
    merchant_id    INTEGER REFERENCES merchants (id),
    activity_id    INTEGER REFERENCES activities (id),
    title          TEXT NOT NULL,
    kind           TEXT NOT NULL,
    total_stock    INTEGER NOT NULL CHECK (total_stock > 0),
    -- I1, enforced by the database as well as by the claim path.
    claimed        INTEGER NOT NULL DEFAULT 0 CHECK (claimed >= 0 AND claimed <= total_stock),
    per_user_limit INTEGER NOT NULL CHECK (per_user_limit > 0),
    claim_start    INTEGER NOT NULL,
    claim_end      INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL, -- last instant any coupon of it is usable
    spec           TEXT NOT NULL,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    published_at   INTEGER,
    aborted_at     INTEGER,
    version        INTEGER NOT NULL DEFAULT 1,
    CHECK (claim_start < claim_end AND claim_end <= expires_at)
) STRICT;

CREATE INDEX templates_by_merchant ON templates (merchant_id, id);
CREATE INDEX templates_by_activity ON templates (activity_id, id);
