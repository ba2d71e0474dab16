-- The audit trail (issue 32; PostgreSQL's 0023, SQLite's 0021): who changed what, with the
-- fields before and after, inserted by the transaction of the change itself. Append-only:
-- coupond never updates or deletes a row. `actor` is `operator:5`, `key:3`, `user:u-1`,
-- `cli:root` or `system:<worker>`; `actor_name` what a person reads (an email, a key's
-- label). `object` is `<kind>:<id>`; `merchant_id` the merchant the object belongs to.
CREATE TABLE audit_log (
    id          BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    at          BIGINT       NOT NULL,
    actor       VARCHAR(300) NOT NULL,
    actor_name  VARCHAR(300) NOT NULL,
    action      VARCHAR(64)  NOT NULL,
    object      VARCHAR(100) NOT NULL,
    merchant_id BIGINT,
    before_json MEDIUMTEXT,
    after_json  MEDIUMTEXT,
    request_id  VARCHAR(200),
    client      VARCHAR(100)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX audit_log_by_object ON audit_log (object, id);
CREATE INDEX audit_log_by_actor ON audit_log (actor, id);
CREATE INDEX audit_log_by_actor_name ON audit_log (actor_name, id);
CREATE INDEX audit_log_by_merchant ON audit_log (merchant_id, id);
