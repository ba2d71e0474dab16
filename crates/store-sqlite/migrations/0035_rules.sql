-- Named promotion rules (issue 63): a condition tree, and optionally a scope, that many
-- templates share. A template using one names it in `rule_id` and keeps a copy of the
-- version in its own spec; a new version rewrites every copy in its transaction. Rules are
-- deleted, so their ids are AUTOINCREMENT: never handed out twice.
CREATE TABLE rules (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    merchant_id INTEGER REFERENCES merchants (id),
    spec        TEXT    NOT NULL,
    version     INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX rules_by_merchant ON rules (merchant_id, id);

ALTER TABLE templates ADD COLUMN rule_id INTEGER REFERENCES rules (id);
CREATE INDEX templates_by_rule ON templates (rule_id);
