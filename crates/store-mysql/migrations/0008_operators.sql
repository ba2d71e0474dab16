-- Operator accounts (issue 32; SQLite's 0020): people of the platform and of merchants who
-- sign in with an email and a password of their own instead of a shared API key.
-- `email` is stored normalised (trimmed, lowercased) by the domain's `Email`, so the unique
-- key is case-insensitive. `password_hash` is a PHC string (`$argon2id$...`), NULL until the
-- operator chooses a password. Platform roles have no merchant; merchant roles have one.
CREATE TABLE operators (
    id            BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    email         VARCHAR(254) NOT NULL UNIQUE,
    name          VARCHAR(100) NOT NULL,
    role          VARCHAR(16)  NOT NULL
                  CHECK (role IN ('admin', 'marketing', 'support', 'finance', 'owner', 'staff')),
    merchant_id   BIGINT,
    password_hash VARCHAR(512),
    disabled_at   BIGINT,
    created_at    BIGINT       NOT NULL,
    updated_at    BIGINT       NOT NULL,
    version       BIGINT       NOT NULL DEFAULT 1,
    CHECK ((role IN ('owner', 'staff')) = (merchant_id IS NOT NULL)),
    FOREIGN KEY (merchant_id) REFERENCES merchants (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX operators_by_merchant ON operators (merchant_id, id);

-- One-time password reset tokens, by the SHA-256 of the token the link holds.
CREATE TABLE password_resets (
    token_hash  VARBINARY(32) NOT NULL PRIMARY KEY,
    operator_id BIGINT        NOT NULL,
    expires_at  BIGINT        NOT NULL,
    FOREIGN KEY (operator_id) REFERENCES operators (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX password_resets_by_operator ON password_resets (operator_id);
CREATE INDEX password_resets_by_expiry ON password_resets (expires_at);

-- The operator a console session is signed in as; NULL for a sign-in with an API key.
-- Disabling the operator or changing its password deletes its sessions.
ALTER TABLE console_sessions ADD COLUMN operator_id BIGINT NULL;
CREATE INDEX console_sessions_by_operator ON console_sessions (operator_id);
ALTER TABLE console_sessions
    ADD CONSTRAINT console_sessions_operator FOREIGN KEY (operator_id)
    REFERENCES operators (id) ON DELETE CASCADE;
