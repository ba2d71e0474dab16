-- The self-audit's runs (issue 34; PostgreSQL's 0028, SQLite's 0026): each run of the
-- invariant checks, queued (`requested_at`), started by the instance holding the `audit` lease,
-- finished with its findings as JSON (`findings`, their count in `violations`) or the error
-- that stopped it. `triggered_by` is `scheduled` (background.audit_at) or `manual` (POST
-- /v1/audits, the console); a scheduled run names its due instant in `slot`, unique, so each
-- day's run is queued once whichever instance asks first.
CREATE TABLE audit_runs (
    id           BIGINT      NOT NULL AUTO_INCREMENT PRIMARY KEY,
    triggered_by VARCHAR(16) NOT NULL,
    slot         BIGINT      UNIQUE,
    requested_at BIGINT      NOT NULL,
    started_at   BIGINT,
    finished_at  BIGINT,
    violations   BIGINT,
    findings     MEDIUMTEXT,
    error        TEXT,
    CONSTRAINT audit_runs_triggered_by CHECK (triggered_by IN ('scheduled', 'manual'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX audit_runs_finished ON audit_runs (finished_at);
