-- The lifecycle after a claim: revoking coupons, refunding used ones, and live changes to
-- claimable templates (SQLite's 0015, in MySQL form).
ALTER TABLE coupon_events ADD COLUMN reason LONGTEXT;

-- One row per coupon given back by a refund of a confirmed order, never changed afterwards:
-- the reconciliation report counts the use in the period of `used_at` and the refund in the
-- period of `at`. `(order_id, coupon_id)` is unique: a second refund finds the first.
CREATE TABLE refunds (
    id          BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    order_id    VARCHAR(255) NOT NULL,
    coupon_id   BIGINT       NOT NULL,
    template_id BIGINT       NOT NULL,
    discount    BIGINT       NOT NULL CHECK (discount >= 0),
    used_at     BIGINT       NOT NULL,
    to_status   VARCHAR(64)  NOT NULL CHECK (to_status IN ('unused', 'expired', 'revoked')),
    actor       VARCHAR(255) NOT NULL,
    reason      LONGTEXT,
    at          BIGINT       NOT NULL,
    UNIQUE KEY refunds_once (order_id, coupon_id),
    FOREIGN KEY (coupon_id) REFERENCES coupons (id),
    FOREIGN KEY (template_id) REFERENCES templates (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX refunds_by_time ON refunds (at);
CREATE INDEX refunds_by_use ON refunds (used_at);

-- A template's history: every change of its terms after creation. `changes` is JSON.
CREATE TABLE template_changes (
    id          BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    template_id BIGINT       NOT NULL,
    actor       VARCHAR(255) NOT NULL,
    at          BIGINT       NOT NULL,
    changes     LONGTEXT     NOT NULL,
    FOREIGN KEY (template_id) REFERENCES templates (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX template_changes_by_template ON template_changes (template_id, id);
