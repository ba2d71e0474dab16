-- Operator accounts (issue 32): people of the platform and of merchants who sign in with an
-- email and a password of their own instead of a shared API key (SQLite's 0020).
-- `email` is stored normalised (trimmed, lowercased) by the domain's `Email`, so the unique
-- key is case-insensitive. `password_hash` is a PHC string (`$argon2id$...`), NULL until the
-- operator chooses a password. Platform roles have no merchant; merchant roles have one.
CREATE TABLE operators (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email         TEXT COLLATE "C" NOT NULL UNIQUE,
    name          TEXT NOT NULL,
    role          TEXT NOT NULL
                  CHECK (role IN ('admin', 'marketing', 'support', 'finance', 'owner', 'staff')),
    merchant_id   BIGINT REFERENCES merchants (id),
    password_hash TEXT,
    disabled_at   TIMESTAMPTZ,
    created_at    TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL,
    version       BIGINT NOT NULL DEFAULT 1,
    CHECK ((role IN ('owner', 'staff')) = (merchant_id IS NOT NULL))
);

CREATE INDEX operators_by_merchant ON operators (merchant_id, id);

-- One-time password reset tokens, by the SHA-256 of the token the link holds.
CREATE TABLE password_resets (
    token_hash  BYTEA PRIMARY KEY,
    operator_id BIGINT NOT NULL REFERENCES operators (id) ON DELETE CASCADE,
    expires_at  TIMESTAMPTZ NOT NULL
);

CREATE INDEX password_resets_by_operator ON password_resets (operator_id);
CREATE INDEX password_resets_by_expiry ON password_resets (expires_at);

-- The operator a console session is signed in as; NULL for a sign-in with an API key.
-- Disabling the operator or changing its password deletes its sessions.
ALTER TABLE console_sessions
    ADD COLUMN operator_id BIGINT REFERENCES operators (id) ON DELETE CASCADE;

CREATE INDEX console_sessions_by_operator ON console_sessions (operator_id);
