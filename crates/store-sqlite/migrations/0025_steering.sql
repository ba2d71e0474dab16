-- Steering live campaigns (issue 34; PostgreSQL's 0027, MySQL's 0013).
--
-- A pause: claims, code redemptions and bulk issuance wait while `paused_at` is set; coupons
-- already held stay usable. `pause_scope` says who paused a template: `template` (itself) or
-- `activity` (its activity's pause, which its resume lifts). An activity's own pause is on its
-- row.
ALTER TABLE templates ADD COLUMN paused_at INTEGER;
ALTER TABLE templates ADD COLUMN pause_reason TEXT;
ALTER TABLE templates ADD COLUMN pause_scope TEXT;
ALTER TABLE activities ADD COLUMN paused_at INTEGER;
ALTER TABLE activities ADD COLUMN pause_reason TEXT;

-- A template's cities as a column (a JSON array of ids), as activities have them, so lists
-- filter by city.
ALTER TABLE templates ADD COLUMN cities TEXT NOT NULL DEFAULT '[]';
UPDATE templates SET cities = COALESCE(json_extract(spec, '$.cities'), '[]');

-- External references: the id of the same thing in the platform's other systems, unique per
-- owner (a template's merchant, 0 for the platform; activities are the platform's).
ALTER TABLE templates ADD COLUMN external_id TEXT;
ALTER TABLE templates ADD COLUMN owner_id INTEGER NOT NULL DEFAULT 0;
UPDATE templates SET owner_id = COALESCE(merchant_id, 0);
CREATE UNIQUE INDEX templates_external_id ON templates (owner_id, external_id);
ALTER TABLE activities ADD COLUMN external_id TEXT;
CREATE UNIQUE INDEX activities_external_id ON activities (external_id);
