-- Named promotion rules (issue 63): a condition tree, and optionally a scope, that many
-- templates share. A template using one names it in `rule_id` and keeps a copy of the
-- version in its own spec; a new version rewrites every copy in its transaction.
CREATE TABLE rules (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    merchant_id BIGINT REFERENCES merchants (id),
    spec        TEXT NOT NULL,
    version     BIGINT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX rules_by_merchant ON rules (merchant_id, id);

ALTER TABLE templates ADD COLUMN rule_id BIGINT REFERENCES rules (id);
CREATE INDEX templates_by_rule ON templates (rule_id);
