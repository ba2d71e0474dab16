-- Coupons held by users, and how many of each template each user holds.
-- `holdings.n` is the per-user limit's counter: a claim increments it only while it is below
-- the template's limit (I2), in the transaction that inserts the coupon and raises
-- `templates.claimed` (I1).

CREATE TABLE coupons (
    id          INTEGER PRIMARY KEY,
    template_id INTEGER NOT NULL REFERENCES templates (id),
    user_id     TEXT NOT NULL,
    status      TEXT NOT NULL DEFAULT 'unused'
                CHECK (status IN ('unused', 'locked', 'used', 'expired', 'revoked')),
    claimed_at  INTEGER NOT NULL,
    valid_from  INTEGER NOT NULL,
    valid_until INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
) STRICT;

CREATE INDEX coupons_by_user ON coupons (user_id, valid_until, id);
CREATE INDEX coupons_by_template ON coupons (template_id);

CREATE TABLE holdings (
    template_id INTEGER NOT NULL REFERENCES templates (id),
    user_id     TEXT NOT NULL,
    n           INTEGER NOT NULL CHECK (n >= 0),
    PRIMARY KEY (template_id, user_id)
) STRICT, WITHOUT ROWID;
