-- When each user was last active (issue 35; PostgreSQL's 0030, MySQL's 0016): one row per
-- user, written in batches by the API's seen worker (every request of a user, POST
-- /v1/users/{id}/seen), only ever moved later. Segment issuance's active_within_days joins it
-- by its key.
CREATE TABLE user_activity (
    user_id      TEXT    PRIMARY KEY,
    last_seen_at INTEGER NOT NULL
) STRICT;
