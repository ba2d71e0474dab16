-- Tags coupond holds for users (`vip`, `new`), for segment issuance (SQLite's 0016).
CREATE TABLE user_tags (
    user_id VARCHAR(64) NOT NULL,
    tag     VARCHAR(64) NOT NULL,
    PRIMARY KEY (user_id, tag)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX user_tags_by_tag ON user_tags (tag, user_id);

-- The tags of templates whose audience is a set of tags: a claim batch joins them with
-- `user_tags` in its transaction.
CREATE TABLE template_tags (
    template_id BIGINT      NOT NULL,
    tag         VARCHAR(64) NOT NULL,
    PRIMARY KEY (template_id, tag),
    FOREIGN KEY (template_id) REFERENCES templates (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
