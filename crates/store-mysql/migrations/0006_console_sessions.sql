-- Console sessions (SQLite's 0018), shared by every instance: signing out or revoking the key
-- ends them at once everywhere.
CREATE TABLE console_sessions (
    id         VARBINARY(32) NOT NULL PRIMARY KEY, -- SHA-256 of the cookie's session id
    key_hash   VARBINARY(32) NOT NULL, -- the signed-in API key's (as api_keys.hash)
    csrf       VARCHAR(64)   NOT NULL, -- this session's form token
    created_at BIGINT        NOT NULL,
    expires_at BIGINT        NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX console_sessions_by_key ON console_sessions (key_hash);
CREATE INDEX console_sessions_by_expiry ON console_sessions (expires_at);
