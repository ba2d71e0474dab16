-- What the upload that created a job asked for (a SHA-256 of its form and bytes), kept with
-- its Idempotency-Key: a retry with the same key and the same upload is answered with the job;
-- the same key with another upload is refused (422 idempotency_key_reused).
ALTER TABLE issuances ADD COLUMN key_fingerprint BLOB;
