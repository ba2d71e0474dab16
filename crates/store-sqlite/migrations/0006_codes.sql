-- Promotion codes. A template has at most one shared code (`batch_id IS NULL`, any number of
-- redemptions within stock and the per-user limit) and any number of single-use codes
-- generated in batches. A single-use code is taken (`redeemed_by`) in the transaction that
-- issues its coupon, so it gives at most one coupon, ever.

ALTER TABLE coupons ADD COLUMN code TEXT; -- the code redeemed for it, if any

CREATE TABLE code_batches (
    id          INTEGER PRIMARY KEY,
    template_id INTEGER NOT NULL REFERENCES templates (id),
    prefix      TEXT NOT NULL,
    length      INTEGER NOT NULL,
    count       INTEGER NOT NULL CHECK (count > 0),
    generated   INTEGER NOT NULL DEFAULT 0 CHECK (generated >= 0 AND generated <= count),
    created_at  INTEGER NOT NULL,
    finished_at INTEGER
) STRICT;

CREATE INDEX code_batches_by_template ON code_batches (template_id, id);
CREATE INDEX code_batches_unfinished ON code_batches (id) WHERE finished_at IS NULL;

CREATE TABLE codes (
    code        TEXT PRIMARY KEY, -- normalized: upper case, no separators
    template_id INTEGER NOT NULL REFERENCES templates (id),
    batch_id    INTEGER REFERENCES code_batches (id), -- NULL: the template's shared code
    redeemed_by TEXT,
    redeemed_at INTEGER,
    coupon_id   INTEGER REFERENCES coupons (id)
) STRICT, WITHOUT ROWID;

CREATE UNIQUE INDEX codes_one_shared_per_template ON codes (template_id) WHERE batch_id IS NULL;
CREATE INDEX codes_by_batch ON codes (batch_id, code);
