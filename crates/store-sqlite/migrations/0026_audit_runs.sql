-- The self-audit's runs (issue 34; PostgreSQL's 0028, MySQL's 0014): each run of the invariant
-- checks, queued (`requested_at`), started by the instance holding the `audit` lease, finished
-- with its findings as JSON (`findings`, their count in `violations`) or the error that stopped
-- it. `triggered_by` is `scheduled` (background.audit_at) or `manual` (POST /v1/audits, the
-- console); a scheduled run names its due instant in `slot`, unique, so each day's run is
-- queued once.
CREATE TABLE audit_runs (
    id           INTEGER PRIMARY KEY,
    triggered_by TEXT    NOT NULL CHECK (triggered_by IN ('scheduled', 'manual')),
    slot         INTEGER UNIQUE,
    requested_at INTEGER NOT NULL,
    started_at   INTEGER,
    finished_at  INTEGER,
    violations   INTEGER,
    findings     TEXT,
    error        TEXT
) STRICT;

CREATE INDEX audit_runs_open ON audit_runs (id) WHERE finished_at IS NULL;
CREATE INDEX audit_runs_finished ON audit_runs (finished_at) WHERE finished_at IS NOT NULL;
