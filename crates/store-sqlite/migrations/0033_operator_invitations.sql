-- Merchants invite people to their teams rather than creating accounts (issue 61 point 8), so
-- that a merchant never learns whether an address has an account elsewhere. The link goes only
-- to the address (the email queued with the row); only its SHA-256 is kept here. An accepted
-- invitation names the operator it became.
CREATE TABLE operator_invitations (
    id          INTEGER PRIMARY KEY,
    merchant_id INTEGER NOT NULL REFERENCES merchants (id),
    email       TEXT NOT NULL,
    name        TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('owner', 'staff')),
    token_hash  BLOB NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    accepted_at INTEGER,
    operator_id INTEGER REFERENCES operators (id)
) STRICT;

CREATE INDEX operator_invitations_by_merchant ON operator_invitations (merchant_id, id);
