-- Merchants invite people to their teams rather than creating accounts (issue 61 point 8;
-- SQLite's 0033), so that a merchant never learns whether an address has an account
-- elsewhere. The link goes only to the address (the email queued with the row); only its
-- SHA-256 is kept here. An accepted invitation names the operator it became.
CREATE TABLE operator_invitations (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    merchant_id BIGINT NOT NULL REFERENCES merchants (id),
    email       TEXT COLLATE "C" NOT NULL,
    name        TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('owner', 'staff')),
    token_hash  BYTEA NOT NULL UNIQUE,
    created_at  TIMESTAMPTZ NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL,
    accepted_at TIMESTAMPTZ,
    operator_id BIGINT REFERENCES operators (id)
);

CREATE INDEX operator_invitations_by_merchant ON operator_invitations (merchant_id, id);
