-- coupond on PostgreSQL. Each record keeps its whole validated draft in `spec` (JSONB, see
-- coupond_store::codec) and copies the fields that queries filter on into columns, written
-- from the same spec in the same statement.

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE merchants (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       TEXT NOT NULL,
    short_name TEXT NOT NULL,
    cities     BIGINT[] NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE api_keys (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    hash        BYTEA NOT NULL UNIQUE, -- SHA-256 of the key; the key itself is never stored
    prefix      TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('platform', 'merchant', 'service')),
    merchant_id BIGINT REFERENCES merchants (id),
    label       TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    revoked_at  TIMESTAMPTZ,
    CHECK ((role = 'merchant') = (merchant_id IS NOT NULL))
);

CREATE TABLE listings (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    merchant_id BIGINT NOT NULL REFERENCES merchants (id),
    external_id TEXT,
    city_id     BIGINT NOT NULL,
    category_id BIGINT NOT NULL,
    title       TEXT NOT NULL,
    price       BIGINT NOT NULL CHECK (price >= 0),
    deposit     BIGINT NOT NULL CHECK (deposit >= 0),
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL,
    UNIQUE (merchant_id, external_id)
);

CREATE TABLE activities (
    id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    title          TEXT NOT NULL,
    kind           TEXT NOT NULL,
    cities         BIGINT[] NOT NULL,
    enroll_start   TIMESTAMPTZ NOT NULL,
    enroll_end     TIMESTAMPTZ NOT NULL,
    run_start      TIMESTAMPTZ NOT NULL,
    run_end        TIMESTAMPTZ NOT NULL,
    spec           JSONB NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL,
    aborted_at     TIMESTAMPTZ,
    version        BIGINT NOT NULL DEFAULT 1,
    enrollment_seq BIGINT NOT NULL DEFAULT 0,
    CHECK (enroll_start < enroll_end AND enroll_end <= run_start AND run_start < run_end)
);

CREATE INDEX activities_cities ON activities USING GIN (cities);

CREATE TABLE templates (
    id             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    merchant_id    BIGINT REFERENCES merchants (id),
    activity_id    BIGINT REFERENCES activities (id),
    title          TEXT NOT NULL,
    kind           TEXT NOT NULL,
    total_stock    BIGINT NOT NULL CHECK (total_stock > 0),
    -- I1, enforced by the database as well as by the claim path.
    claimed        BIGINT NOT NULL DEFAULT 0 CHECK (claimed >= 0 AND claimed <= total_stock),
    per_user_limit BIGINT NOT NULL CHECK (per_user_limit > 0),
    claim_start    TIMESTAMPTZ NOT NULL,
    claim_end      TIMESTAMPTZ NOT NULL,
    expires_at     TIMESTAMPTZ NOT NULL, -- last instant any coupon of it is usable
    spec           JSONB NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL,
    published_at   TIMESTAMPTZ,
    aborted_at     TIMESTAMPTZ,
    version        BIGINT NOT NULL DEFAULT 1,
    CHECK (claim_start < claim_end AND claim_end <= expires_at)
);

CREATE INDEX templates_by_merchant ON templates (merchant_id, id);
CREATE INDEX templates_by_activity ON templates (activity_id, id);
