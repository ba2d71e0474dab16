-- A key belongs to the person who made it (issue 61 point 7): it stops working when their
-- account is disabled. NULL: made by a key, the command line or the demo (nobody's).
ALTER TABLE api_keys ADD COLUMN operator_id INTEGER REFERENCES operators (id);
