-- Tags coupond holds for users (`vip`, `new`), for segment issuance (SQLite's 0016).
CREATE TABLE user_tags (
    user_id VARCHAR(64) NOT NULL,
    tag     VARCHAR(64) NOT NULL,
    PRIMARY KEY (user_id, tag)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX user_tags_by_tag ON user_tags (tag, user_id);
