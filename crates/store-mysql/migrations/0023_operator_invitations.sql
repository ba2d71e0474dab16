-- Merchants invite people to their teams rather than creating accounts (issue 61 point 8;
-- SQLite's 0033), so that a merchant never learns whether an address has an account
-- elsewhere. The link goes only to the address (the email queued with the row); only its
-- SHA-256 is kept here. An accepted invitation names the operator it became.
CREATE TABLE operator_invitations (
    id          BIGINT        NOT NULL AUTO_INCREMENT PRIMARY KEY,
    merchant_id BIGINT        NOT NULL,
    email       VARCHAR(254)  NOT NULL,
    name        VARCHAR(100)  NOT NULL,
    role        VARCHAR(16)   NOT NULL CHECK (role IN ('owner', 'staff')),
    token_hash  VARBINARY(32) NOT NULL UNIQUE,
    created_at  BIGINT        NOT NULL,
    expires_at  BIGINT        NOT NULL,
    accepted_at BIGINT,
    operator_id BIGINT,
    FOREIGN KEY (merchant_id) REFERENCES merchants (id),
    FOREIGN KEY (operator_id) REFERENCES operators (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX operator_invitations_by_merchant ON operator_invitations (merchant_id, id);
