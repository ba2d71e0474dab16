-- Tags coupond holds for users (`vip`, `new`), for segment issuance. A user holds at most 100
-- (the store refuses more); `user_tags_by_tag` finds a segment's users in user order.
CREATE TABLE user_tags (
    user_id TEXT NOT NULL,
    tag     TEXT NOT NULL,
    PRIMARY KEY (user_id, tag)
);

CREATE INDEX user_tags_by_tag ON user_tags (tag, user_id);
