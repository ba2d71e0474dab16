-- Tags the platform shares with merchants (`PUT /v1/tags/{tag}/shared`): a merchant's segment
-- issuance counts only these, and a merchant's template audience may name only these. Every
-- other tag stays private to the platform.
CREATE TABLE shared_tags (
    tag       TEXT    NOT NULL PRIMARY KEY,
    shared_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
