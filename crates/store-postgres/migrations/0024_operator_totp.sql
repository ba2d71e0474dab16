-- The operators' optional second factor (issue 32; SQLite's 0022, MySQL's 0010): an RFC 6238
-- secret (base32), and the last time step a code was accepted for, so one code signs in once.
ALTER TABLE operators ADD COLUMN totp_secret TEXT;
ALTER TABLE operators ADD COLUMN totp_last_step BIGINT;
