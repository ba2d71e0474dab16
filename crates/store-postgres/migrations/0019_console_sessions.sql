-- Console sessions, shared by every instance: signing out or revoking the key ends them at
-- once everywhere. `id` is the SHA-256 of the random session id the browser's cookie holds;
-- `key_hash` is the signed-in API key's (as api_keys.hash).
CREATE TABLE console_sessions (
    id         BYTEA PRIMARY KEY,
    key_hash   BYTEA NOT NULL,
    csrf       TEXT NOT NULL, -- this session's form token
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX console_sessions_by_key ON console_sessions (key_hash);
CREATE INDEX console_sessions_by_expiry ON console_sessions (expires_at);
