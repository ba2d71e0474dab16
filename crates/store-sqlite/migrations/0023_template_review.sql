-- Enrollment approval (issue 32; PostgreSQL's 0025, MySQL's 0011): where a merchant's template
-- stands with the platform's review. `none`: no approval needed (every template before this
-- migration); `pending`: waits, not public; `approved` / `rejected` at `reviewed_at`, the
-- rejection with the reason its merchant reads.
ALTER TABLE templates ADD COLUMN approval TEXT NOT NULL DEFAULT 'none';
ALTER TABLE templates ADD COLUMN reviewed_at INTEGER;
ALTER TABLE templates ADD COLUMN review_reason TEXT;
-- The platform's queue: what waits, oldest first.
CREATE INDEX templates_pending ON templates (approval, id);
