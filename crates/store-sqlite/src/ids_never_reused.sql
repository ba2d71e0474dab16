-- No id is ever handed out twice (issue 61 point 11). SQLite gives a new row the largest id
-- in the table plus one, so deleting the newest draft template (or listing, webhook, webhook
-- delivery) and creating another reused its id, and the audit trail then mixed two objects'
-- histories. AUTOINCREMENT keeps the largest id ever used in sqlite_sequence instead; SQLite
-- cannot add it to a table, so each table is rebuilt as its documentation says: foreign keys
-- off around one transaction, checked before it commits. That cannot run inside a migration
-- file (the migrator wraps each in a transaction, where the pragma does nothing), so
-- `SqliteStore::migrate` runs this script once, after the files, with foreign keys off and
-- inside its own transaction (src/ids.rs).
-- PostgreSQL's sequences and InnoDB's counters never go back.
CREATE TABLE templates_rebuilt (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
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
    version        INTEGER NOT NULL DEFAULT 1, used INTEGER NOT NULL DEFAULT 0 CHECK (used >= 0), given INTEGER NOT NULL DEFAULT 0 CHECK (given >= 0), reserved INTEGER NOT NULL DEFAULT 0 CHECK (reserved >= 0), announced TEXT NOT NULL DEFAULT 'none', approval TEXT NOT NULL DEFAULT 'none', reviewed_at INTEGER, review_reason TEXT, paused_at INTEGER, pause_reason TEXT, pause_scope TEXT, cities TEXT NOT NULL DEFAULT '[]', external_id TEXT, owner_id INTEGER NOT NULL DEFAULT 0,
    CHECK (claim_start < claim_end AND claim_end <= expires_at)
) STRICT;
INSERT INTO templates_rebuilt SELECT * FROM templates;
DROP TABLE templates;
ALTER TABLE templates_rebuilt RENAME TO templates;
CREATE INDEX templates_by_merchant ON templates (merchant_id, id);
CREATE INDEX templates_by_activity ON templates (activity_id, id);
CREATE INDEX templates_due_start ON templates (announced, claim_start);
CREATE INDEX templates_due_end ON templates (announced, claim_end);
CREATE INDEX templates_due_expiry ON templates (announced, expires_at);
CREATE INDEX templates_aborted ON templates (aborted_at) WHERE aborted_at IS NOT NULL;
CREATE INDEX templates_pending ON templates (approval, id);
CREATE UNIQUE INDEX templates_external_id ON templates (owner_id, external_id);

CREATE TABLE listings_rebuilt (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    merchant_id INTEGER NOT NULL REFERENCES merchants (id),
    external_id TEXT,
    city_id     INTEGER NOT NULL,
    category_id INTEGER NOT NULL,
    title       TEXT NOT NULL,
    price       INTEGER NOT NULL CHECK (price >= 0),
    deposit     INTEGER NOT NULL CHECK (deposit >= 0),
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL, bound INTEGER NOT NULL DEFAULT 0 CHECK (bound >= 0),
    UNIQUE (merchant_id, external_id)
) STRICT;
INSERT INTO listings_rebuilt SELECT * FROM listings;
DROP TABLE listings;
ALTER TABLE listings_rebuilt RENAME TO listings;
CREATE INDEX listings_by_place ON listings (city_id, category_id, id);
CREATE INDEX listings_by_merchant ON listings (merchant_id, id);
CREATE INDEX listings_by_city ON listings (city_id, id);

CREATE TABLE webhooks_rebuilt (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    merchant_id INTEGER REFERENCES merchants (id), -- NULL: the platform's
    url         TEXT NOT NULL,
    secret      TEXT NOT NULL, -- signs each delivery (HMAC-SHA256); shown once at creation
    event_types TEXT NOT NULL, -- JSON array of event types, or ["*"]
    created_at  INTEGER NOT NULL,
    disabled_at INTEGER
) STRICT;
INSERT INTO webhooks_rebuilt SELECT * FROM webhooks;
DROP TABLE webhooks;
ALTER TABLE webhooks_rebuilt RENAME TO webhooks;

CREATE TABLE webhook_deliveries_rebuilt (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id   INTEGER NOT NULL REFERENCES webhooks (id),
    event_id     INTEGER NOT NULL,
    event_type   TEXT NOT NULL,
    payload      TEXT NOT NULL, -- the JSON body sent, the same on every attempt
    state        TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_at      INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    delivered_at INTEGER,
    UNIQUE (webhook_id, event_id)
) STRICT;
INSERT INTO webhook_deliveries_rebuilt SELECT * FROM webhook_deliveries;
DROP TABLE webhook_deliveries;
ALTER TABLE webhook_deliveries_rebuilt RENAME TO webhook_deliveries;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at) WHERE state = 'pending';
