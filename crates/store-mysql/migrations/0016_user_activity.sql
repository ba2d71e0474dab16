-- When each user was last active (issue 35; PostgreSQL's 0030, SQLite's 0028): one row per
-- user, written in batches by the API's seen worker (every request of a user, POST
-- /v1/users/{id}/seen), only ever moved later. Segment issuance's active_within_days joins it
-- by its key.
CREATE TABLE user_activity (
    user_id      VARCHAR(64) NOT NULL PRIMARY KEY,
    last_seen_at BIGINT      NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
