-- Tags coupond holds for users (`vip`, `new`), for segment issuance. A user holds at most 100
-- (the store refuses more); `user_tags_by_tag` finds a segment's users in user order.
CREATE TABLE user_tags (
    user_id TEXT NOT NULL,
    tag     TEXT NOT NULL,
    PRIMARY KEY (user_id, tag)
) STRICT, WITHOUT ROWID;

CREATE INDEX user_tags_by_tag ON user_tags (tag, user_id);

-- The tags of templates whose audience is a set of tags (written with the template): a claim
-- batch joins them with `user_tags` in its transaction.
CREATE TABLE template_tags (
    template_id INTEGER NOT NULL REFERENCES templates (id),
    tag         TEXT    NOT NULL,
    PRIMARY KEY (template_id, tag)
) STRICT, WITHOUT ROWID;
