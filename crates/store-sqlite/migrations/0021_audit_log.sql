-- The audit trail (issue 32; PostgreSQL's 0023, MySQL's 0009): who changed what, with the fields
-- before and after, inserted by the transaction of the change itself. Append-only: coupond
-- never updates or deletes a row. `actor` is `operator:5`, `key:3`, `user:u-1`, `cli:root` or
-- `system:<worker>`; `actor_name` what a person reads (an email, a key's label). `object` is
-- `<kind>:<id>`; `merchant_id` the merchant the object belongs to, for its owners' reads.
CREATE TABLE audit_log (
    id          INTEGER PRIMARY KEY,
    at          INTEGER NOT NULL,
    actor       TEXT NOT NULL,
    actor_name  TEXT NOT NULL,
    action      TEXT NOT NULL,
    object      TEXT NOT NULL,
    merchant_id INTEGER,
    before_json TEXT,
    after_json  TEXT,
    request_id  TEXT,
    client      TEXT
);

CREATE INDEX audit_log_by_object ON audit_log (object, id);
CREATE INDEX audit_log_by_actor ON audit_log (actor, id);
CREATE INDEX audit_log_by_actor_name ON audit_log (actor_name, id);
CREATE INDEX audit_log_by_merchant ON audit_log (merchant_id, id);
