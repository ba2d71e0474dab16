-- coupond on MariaDB 10.11 / MySQL 8: the MySQL form of the SQLite migrations 0001-0014
-- (crates/store-sqlite/migrations), folded into one schema: same tables, column names, column
-- order and comments. Each record keeps its whole validated draft in `spec` (JSON, see
-- coupond_store::codec) and copies the fields that queries filter on into columns, written
-- from the same spec in the same statement.
--
-- Conventions (the Rust code relies on them):
-- - Every table: ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin (binary collation:
--   codes, keys and user ids compare case-sensitively, as on SQLite and PostgreSQL).
-- - The session runs with sql_mode including ANSI_QUOTES: reserved words used as column names
--   ("key", "generated") are written in double quotes.
-- - Integers, booleans and instants (INTEGER microseconds since the Unix epoch, UTC) are
--   BIGINT; the driver reads every integer as i64. No REAL.
-- - INTEGER PRIMARY KEY is BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, except coupons.id:
--   the backend allocates coupon ids itself, in blocks, from the `id_blocks` counter.
-- - TEXT that is a key, unique, indexed or joined on is VARCHAR (ids, codes, keys: 255;
--   scoped idempotency keys: 768; enums: 64; urls: 2048, not indexed); free text and JSON
--   documents are LONGTEXT (no defaults). Indexes stay under InnoDB's 3072-byte key limit.
-- - BLOB: VARBINARY(64) for a unique or indexed hash, BLOB for other fingerprints, LONGBLOB
--   for payloads (answers, uploaded user lists).
-- - CHECK constraints and foreign keys are kept (a CHECK that names another column is written
--   as a table constraint, as MySQL requires).
-- - Partial indexes are plain indexes (the filtered column first where it helps); the partial
--   unique index codes_one_shared_per_template is a UNIQUE index on a stored generated column
--   (`codes.shared_template`, NULLs do not collide). The expression index messages_unread_first
--   is a plain index on (user_id, read_at, id).
-- - Added for this backend: outbox.seq (commit order), id_blocks (coupon id counter) and
--   locks (transaction-scoped named locks).
-- - One statement per `;`: no DELIMITER, triggers or stored procedures.

CREATE TABLE settings (
    "key" VARCHAR(255) NOT NULL PRIMARY KEY,
    value LONGTEXT     NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE merchants (
    id         BIGINT   NOT NULL AUTO_INCREMENT PRIMARY KEY,
    name       LONGTEXT NOT NULL,
    short_name LONGTEXT NOT NULL,
    cities     LONGTEXT NOT NULL, -- JSON array of city ids, sorted
    created_at BIGINT   NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE api_keys (
    id          BIGINT        NOT NULL AUTO_INCREMENT PRIMARY KEY,
    hash        VARBINARY(64) NOT NULL UNIQUE, -- SHA-256 of the key; the key itself is never stored
    prefix      VARCHAR(255)  NOT NULL,
    role        VARCHAR(64)   NOT NULL CHECK (role IN ('platform', 'merchant', 'service')),
    merchant_id BIGINT,
    label       LONGTEXT      NOT NULL,
    created_at  BIGINT        NOT NULL,
    revoked_at  BIGINT,
    CHECK ((role = 'merchant') = (merchant_id IS NOT NULL)),
    FOREIGN KEY (merchant_id) REFERENCES merchants (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- `bound` counts a listing's bindings; a bind increments it only while it is below the
-- configured maximum, in the same transaction as the binding row.
CREATE TABLE listings (
    id          BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    merchant_id BIGINT       NOT NULL,
    external_id VARCHAR(255),
    city_id     BIGINT       NOT NULL,
    category_id BIGINT       NOT NULL,
    title       LONGTEXT     NOT NULL,
    price       BIGINT       NOT NULL CHECK (price >= 0),
    deposit     BIGINT       NOT NULL CHECK (deposit >= 0),
    created_at  BIGINT       NOT NULL,
    updated_at  BIGINT       NOT NULL,
    bound       BIGINT       NOT NULL DEFAULT 0 CHECK (bound >= 0),
    UNIQUE (merchant_id, external_id),
    FOREIGN KEY (merchant_id) REFERENCES merchants (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- `announced`: the last status the scheduler emitted an event for ('none' before the first).
CREATE TABLE activities (
    id             BIGINT      NOT NULL AUTO_INCREMENT PRIMARY KEY,
    title          LONGTEXT    NOT NULL,
    kind           VARCHAR(64) NOT NULL,
    cities         LONGTEXT    NOT NULL, -- JSON array of city ids, sorted
    enroll_start   BIGINT      NOT NULL,
    enroll_end     BIGINT      NOT NULL,
    run_start      BIGINT      NOT NULL,
    run_end        BIGINT      NOT NULL,
    spec           LONGTEXT    NOT NULL,
    created_at     BIGINT      NOT NULL,
    updated_at     BIGINT      NOT NULL,
    aborted_at     BIGINT,
    version        BIGINT      NOT NULL DEFAULT 1,
    enrollment_seq BIGINT      NOT NULL DEFAULT 0,
    announced      VARCHAR(64) NOT NULL DEFAULT 'none',
    CHECK (enroll_start < enroll_end AND enroll_end <= run_start AND run_start < run_end)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE templates (
    id             BIGINT      NOT NULL AUTO_INCREMENT PRIMARY KEY,
    merchant_id    BIGINT,
    activity_id    BIGINT,
    title          LONGTEXT    NOT NULL,
    kind           VARCHAR(64) NOT NULL,
    total_stock    BIGINT      NOT NULL CHECK (total_stock > 0),
    -- I1, enforced by the database as well as by the claim path (table CHECK below).
    claimed        BIGINT      NOT NULL DEFAULT 0,
    per_user_limit BIGINT      NOT NULL CHECK (per_user_limit > 0),
    claim_start    BIGINT      NOT NULL,
    claim_end      BIGINT      NOT NULL,
    expires_at     BIGINT      NOT NULL, -- last instant any coupon of it is usable
    spec           LONGTEXT    NOT NULL,
    created_at     BIGINT      NOT NULL,
    updated_at     BIGINT      NOT NULL,
    published_at   BIGINT,
    aborted_at     BIGINT,
    version        BIGINT      NOT NULL DEFAULT 1,
    used           BIGINT      NOT NULL DEFAULT 0 CHECK (used >= 0),
    given          BIGINT      NOT NULL DEFAULT 0 CHECK (given >= 0),
    reserved       BIGINT      NOT NULL DEFAULT 0 CHECK (reserved >= 0),
    announced      VARCHAR(64) NOT NULL DEFAULT 'none',
    CHECK (claimed >= 0 AND claimed <= total_stock),
    CHECK (claim_start < claim_end AND claim_end <= expires_at),
    FOREIGN KEY (merchant_id) REFERENCES merchants (id),
    FOREIGN KEY (activity_id) REFERENCES activities (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX templates_by_merchant ON templates (merchant_id, id);
CREATE INDEX templates_by_activity ON templates (activity_id, id);
CREATE INDEX templates_due_start ON templates (announced, claim_start);
CREATE INDEX templates_due_end ON templates (announced, claim_end);
CREATE INDEX templates_due_expiry ON templates (announced, expires_at);
CREATE INDEX templates_aborted ON templates (aborted_at);

-- Bindings of templates to listings.
CREATE TABLE bindings (
    listing_id  BIGINT NOT NULL,
    template_id BIGINT NOT NULL,
    bound_at    BIGINT NOT NULL,
    PRIMARY KEY (listing_id, template_id),
    FOREIGN KEY (listing_id) REFERENCES listings (id),
    FOREIGN KEY (template_id) REFERENCES templates (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX bindings_by_template ON bindings (template_id, listing_id);
CREATE INDEX listings_by_place ON listings (city_id, category_id, id);
CREATE INDEX listings_by_merchant ON listings (merchant_id, id);
-- Listing search with only a city given walks the city's listings in id order.
CREATE INDEX listings_by_city ON listings (city_id, id);

-- Coupons held by users. `id` is allocated by the backend (id_blocks), not AUTO_INCREMENT.
CREATE TABLE coupons (
    id           BIGINT       NOT NULL PRIMARY KEY,
    template_id  BIGINT       NOT NULL,
    user_id      VARCHAR(255) NOT NULL,
    status       VARCHAR(64)  NOT NULL DEFAULT 'unused'
                 CHECK (status IN ('unused', 'locked', 'used', 'expired', 'revoked')),
    claimed_at   BIGINT       NOT NULL,
    valid_from   BIGINT       NOT NULL,
    valid_until  BIGINT       NOT NULL,
    updated_at   BIGINT       NOT NULL,
    code         VARCHAR(255), -- the code redeemed for it, if any
    order_id     VARCHAR(255), -- the order holding or having used it
    locked_until BIGINT,       -- while locked: the lock's deadline
    discount     BIGINT,       -- planned at lock, final at confirm
    used_at      BIGINT,
    issuance_id  BIGINT,       -- the job that issued it, if one did
    FOREIGN KEY (template_id) REFERENCES templates (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX coupons_by_user ON coupons (user_id, valid_until, id);
-- (template_id, user_id): the audit counts a user's coupons of a template per holding.
CREATE INDEX coupons_by_template ON coupons (template_id, user_id);
CREATE INDEX coupons_by_order ON coupons (order_id);
CREATE INDEX coupons_unused_by_expiry ON coupons (status, valid_until);
CREATE INDEX coupons_by_used_at ON coupons (used_at);

-- `n` is the per-user limit's counter (I2).
CREATE TABLE holdings (
    template_id BIGINT       NOT NULL,
    user_id     VARCHAR(255) NOT NULL,
    n           BIGINT       NOT NULL CHECK (n >= 0),
    PRIMARY KEY (template_id, user_id),
    FOREIGN KEY (template_id) REFERENCES templates (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Idempotency keys of claims, recorded with the coupon they issued (I4).
CREATE TABLE claim_keys (
    "key"       VARCHAR(768) NOT NULL PRIMARY KEY, -- scope (principal and route) and the caller's key
    fingerprint BLOB         NOT NULL,             -- SHA-256 of what was asked (template and user)
    coupon_id   BIGINT,
    created_at  BIGINT       NOT NULL,
    FOREIGN KEY (coupon_id) REFERENCES coupons (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The coupon operation log, written in the transaction that makes the change.
CREATE TABLE coupon_events (
    id          BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    coupon_id   BIGINT       NOT NULL,
    from_status VARCHAR(64), -- NULL when the change created the coupon
    to_status   VARCHAR(64)  NOT NULL,
    order_id    VARCHAR(255),
    actor       VARCHAR(255) NOT NULL, -- platform | merchant:<id> | service | user:<id> | system
    at          BIGINT       NOT NULL,
    FOREIGN KEY (coupon_id) REFERENCES coupons (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX coupon_events_by_coupon ON coupon_events (coupon_id, id);
CREATE INDEX coupon_events_by_time ON coupon_events (at);

-- Events for observers and external sinks. `body` is JSON. `seq` (added here): the event's
-- position in commit order, set after commit by the backend's sequencer (NULL until then).
CREATE TABLE outbox (
    id   BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    kind VARCHAR(255) NOT NULL,
    at   BIGINT       NOT NULL,
    body LONGTEXT     NOT NULL,
    seq  BIGINT       NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX outbox_by_seq ON outbox (seq, id);

-- Promotion codes: at most one shared code per template (`batch_id IS NULL`) and any number
-- of single-use codes generated in batches.
CREATE TABLE code_batches (
    id          BIGINT      NOT NULL AUTO_INCREMENT PRIMARY KEY,
    template_id BIGINT      NOT NULL,
    prefix      VARCHAR(64) NOT NULL,
    length      BIGINT      NOT NULL,
    count       BIGINT      NOT NULL CHECK (count > 0),
    "generated" BIGINT      NOT NULL DEFAULT 0,
    created_at  BIGINT      NOT NULL,
    finished_at BIGINT,
    CHECK ("generated" >= 0 AND "generated" <= count),
    FOREIGN KEY (template_id) REFERENCES templates (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX code_batches_by_template ON code_batches (template_id, id);
CREATE INDEX code_batches_unfinished ON code_batches (finished_at, id);

-- `shared_template` (added here) is template_id for the shared code, NULL otherwise: its
-- UNIQUE index is SQLite's partial unique index codes_one_shared_per_template.
CREATE TABLE codes (
    code            VARCHAR(255) NOT NULL PRIMARY KEY, -- normalized: upper case, no separators
    template_id     BIGINT       NOT NULL,
    batch_id        BIGINT,      -- NULL: the template's shared code
    redeemed_by     VARCHAR(255),
    redeemed_at     BIGINT,
    coupon_id       BIGINT,
    shared_template BIGINT AS (CASE WHEN batch_id IS NULL THEN template_id END) STORED,
    FOREIGN KEY (template_id) REFERENCES templates (id),
    FOREIGN KEY (batch_id) REFERENCES code_batches (id),
    FOREIGN KEY (coupon_id) REFERENCES coupons (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE UNIQUE INDEX codes_one_shared_per_template ON codes (shared_template);
CREATE INDEX codes_by_batch ON codes (batch_id, code);

-- Checkout (TCC) keyed by the order id.
CREATE TABLE orders (
    order_id    VARCHAR(255) NOT NULL PRIMARY KEY,
    user_id     VARCHAR(255) NOT NULL,
    state       VARCHAR(64)  NOT NULL CHECK (state IN ('locked', 'confirmed', 'cancelled', 'expired')),
    fingerprint BLOB         NOT NULL, -- SHA-256 of the lock request, to tell a retry from a conflict
    deadline    BIGINT       NOT NULL,
    answer      LONGTEXT     NOT NULL, -- the lock's answer (JSON), replayed to a retried lock
    created_at  BIGINT       NOT NULL,
    ended_at    BIGINT
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX orders_locked_by_deadline ON orders (state, deadline);

-- Idempotency keys of every write route but claims: the first answer, replayed to retries
-- until `expires_at`.
CREATE TABLE idempotency (
    "key"        VARCHAR(768) NOT NULL PRIMARY KEY, -- scope (principal and route) and the caller's key
    fingerprint  BLOB         NOT NULL,             -- SHA-256 of the method, path and body
    status       BIGINT,                            -- NULL while the first request is running
    content_type VARCHAR(255),
    body         LONGBLOB,
    created_at   BIGINT       NOT NULL,
    expires_at   BIGINT       NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX idempotency_by_expiry ON idempotency (expires_at);

-- Singleton loops (scheduler, dispatcher) hold a lease; another instance takes over when it
-- lapses.
CREATE TABLE leases (
    name   VARCHAR(255) NOT NULL PRIMARY KEY,
    holder VARCHAR(255) NOT NULL,
    until  BIGINT       NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- How far each durable consumer of the outbox has got (its last event).
CREATE TABLE sink_progress (
    sink     VARCHAR(255) NOT NULL PRIMARY KEY,
    txid     BIGINT       NOT NULL,
    event_id BIGINT       NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One reminder per (user, template, day).
CREATE TABLE reminders (
    user_id     VARCHAR(255) NOT NULL,
    template_id BIGINT       NOT NULL,
    day         BIGINT       NOT NULL, -- days since 1970-01-01 (UTC) of the coupons' expiry
    due_at      BIGINT       NOT NULL,
    PRIMARY KEY (user_id, template_id, day),
    FOREIGN KEY (template_id) REFERENCES templates (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX reminders_due ON reminders (due_at);

-- Inbox: the text once (per template and kind, or per issuance), a row per user.
CREATE TABLE message_contents (
    id         BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    "key"      VARCHAR(255) NOT NULL UNIQUE,
    kind       VARCHAR(64)  NOT NULL,
    title      LONGTEXT     NOT NULL,
    body       LONGTEXT     NOT NULL,
    created_at BIGINT       NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE messages (
    id         BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    user_id    VARCHAR(255) NOT NULL,
    content_id BIGINT       NOT NULL,
    source     VARCHAR(255) NOT NULL, -- what caused it (an event, a reminder): one message per source
    created_at BIGINT       NOT NULL,
    read_at    BIGINT,
    UNIQUE (user_id, source),
    FOREIGN KEY (content_id) REFERENCES message_contents (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- SQLite: (user_id, (read_at IS NOT NULL), id). Unread rows (read_at NULL) sort first here too.
CREATE INDEX messages_unread_first ON messages (user_id, read_at, id);

-- Bulk issuance jobs, issued in chunks, each chunk in one transaction with `next_user`.
CREATE TABLE issuances (
    id              BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    template_id     BIGINT       NOT NULL,
    actor           VARCHAR(255) NOT NULL,
    state           VARCHAR(64)  NOT NULL CHECK (state IN ('pending', 'running', 'done', 'failed')),
    users           LONGBLOB     NOT NULL, -- the valid, distinct user ids, one per line
    requested       BIGINT       NOT NULL, -- how many
    next_user       BIGINT       NOT NULL DEFAULT 0, -- users before this one are done
    issued          BIGINT       NOT NULL DEFAULT 0,
    skipped         BIGINT       NOT NULL DEFAULT 0, -- the user already holds the per-user limit
    sold_out        BIGINT       NOT NULL DEFAULT 0,
    not_eligible    BIGINT       NOT NULL DEFAULT 0, -- outside the template's audience
    duplicates      BIGINT       NOT NULL DEFAULT 0, -- repeated lines, counted once
    invalid         BIGINT       NOT NULL DEFAULT 0, -- lines that are not a user id
    invalid_lines   LONGTEXT     NOT NULL, -- JSON: the first 100 invalid lines with their numbers
    error           LONGTEXT,
    created_at      BIGINT       NOT NULL,
    started_at      BIGINT,
    finished_at     BIGINT,
    idempotency_key VARCHAR(768), -- the Idempotency-Key of the upload that created it (scoped)
    key_fingerprint BLOB,         -- SHA-256 of that upload's form and bytes
    FOREIGN KEY (template_id) REFERENCES templates (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX issuances_open ON issuances (state, id);
CREATE INDEX issuances_by_template ON issuances (template_id, id);
-- NULLs are distinct: unkeyed uploads differ.
CREATE UNIQUE INDEX issuances_by_key ON issuances (idempotency_key);

-- Webhooks: endpoints that receive signed events, and each delivery with its attempts.
CREATE TABLE webhooks (
    id          BIGINT        NOT NULL AUTO_INCREMENT PRIMARY KEY,
    merchant_id BIGINT,                 -- NULL: the platform's
    url         VARCHAR(2048) NOT NULL,
    secret      VARCHAR(255)  NOT NULL, -- signs each delivery (HMAC-SHA256); shown once at creation
    event_types LONGTEXT      NOT NULL, -- JSON array of event types, or ["*"]
    created_at  BIGINT        NOT NULL,
    disabled_at BIGINT,
    FOREIGN KEY (merchant_id) REFERENCES merchants (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE webhook_deliveries (
    id           BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    webhook_id   BIGINT       NOT NULL,
    event_id     BIGINT       NOT NULL,
    event_type   VARCHAR(255) NOT NULL,
    payload      LONGTEXT     NOT NULL, -- the JSON body sent, the same on every attempt
    state        VARCHAR(64)  NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts     BIGINT       NOT NULL DEFAULT 0,
    next_at      BIGINT       NOT NULL,
    created_at   BIGINT       NOT NULL,
    delivered_at BIGINT,
    UNIQUE (webhook_id, event_id),
    FOREIGN KEY (webhook_id) REFERENCES webhooks (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_at);

CREATE TABLE webhook_attempts (
    delivery_id BIGINT NOT NULL,
    attempt     BIGINT NOT NULL,
    at          BIGINT NOT NULL,
    status      BIGINT,   -- the receiver's HTTP status; NULL when there was no answer
    error       LONGTEXT,
    PRIMARY KEY (delivery_id, attempt),
    FOREIGN KEY (delivery_id) REFERENCES webhook_deliveries (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Added for this backend: counters the backend allocates ids from (`next`: the last id
-- handed out).
CREATE TABLE id_blocks (
    name VARCHAR(64) NOT NULL PRIMARY KEY,
    next BIGINT      NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

INSERT INTO id_blocks (name, next) VALUES ('coupons', 0);

-- Added for this backend: transaction-scoped named locks (a transaction upserts a row and
-- holds its lock until commit).
CREATE TABLE locks (
    name VARCHAR(255) NOT NULL PRIMARY KEY
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
