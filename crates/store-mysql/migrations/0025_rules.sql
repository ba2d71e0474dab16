-- Named promotion rules (issue 63): a condition tree, and optionally a scope, that many
-- templates share. A template using one names it in `rule_id` and keeps a copy of the
-- version in its own spec; a new version rewrites every copy in its transaction.
CREATE TABLE rules (
    id          BIGINT   NOT NULL AUTO_INCREMENT PRIMARY KEY,
    merchant_id BIGINT,
    spec        LONGTEXT NOT NULL,
    version     BIGINT   NOT NULL,
    created_at  BIGINT   NOT NULL,
    updated_at  BIGINT   NOT NULL,
    KEY rules_by_merchant (merchant_id, id),
    FOREIGN KEY (merchant_id) REFERENCES merchants (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

ALTER TABLE templates ADD COLUMN rule_id BIGINT,
    ADD KEY templates_by_rule (rule_id),
    ADD FOREIGN KEY (rule_id) REFERENCES rules (id);
