-- The Idempotency-Key of the upload that created a job, written with the job itself: a retry
-- that runs again after its first attempt died with the process (after `idempotency_stale`)
-- finds this job instead of starting a second one. NULLs are distinct: unkeyed uploads differ.
ALTER TABLE issuances ADD COLUMN idempotency_key TEXT;
CREATE UNIQUE INDEX issuances_by_key ON issuances (idempotency_key);
