-- Steering live campaigns (issue 34; SQLite's 0025, MySQL's 0013).
--
-- A pause: claims, code redemptions and bulk issuance wait while `paused_at` is set; coupons
-- already held stay usable. `pause_scope` says who paused a template: `template` (itself) or
-- `activity` (its activity's pause, which its resume lifts). An activity's own pause is on its
-- row.
ALTER TABLE templates ADD COLUMN paused_at TIMESTAMPTZ;
ALTER TABLE templates ADD COLUMN pause_reason TEXT;
ALTER TABLE templates ADD COLUMN pause_scope TEXT;
ALTER TABLE activities ADD COLUMN paused_at TIMESTAMPTZ;
ALTER TABLE activities ADD COLUMN pause_reason TEXT;

-- A template's cities as a column, as activities have them, so lists filter by city.
ALTER TABLE templates ADD COLUMN cities BIGINT[] NOT NULL DEFAULT '{}';
UPDATE templates SET cities = ARRAY(SELECT jsonb_array_elements_text(spec -> 'cities')::bigint);
CREATE INDEX templates_cities ON templates USING GIN (cities);

-- External references: the id of the same thing in the platform's other systems, unique per
-- owner (a template's merchant, 0 for the platform; activities are the platform's).
ALTER TABLE templates ADD COLUMN external_id TEXT;
ALTER TABLE templates ADD COLUMN owner_id BIGINT NOT NULL DEFAULT 0;
UPDATE templates SET owner_id = COALESCE(merchant_id, 0);
CREATE UNIQUE INDEX templates_external_id ON templates (owner_id, external_id);
ALTER TABLE activities ADD COLUMN external_id TEXT;
CREATE UNIQUE INDEX activities_external_id ON activities (external_id);

-- The plain claim path's function: a template claims only while public (approved where its
-- enrollment needs approval) and not paused, as every other claim path checks.
CREATE OR REPLACE FUNCTION coupond_claim_plain(t BIGINT, at TIMESTAMPTZ, start INT,
                                               users TEXT[], froms TIMESTAMPTZ[],
                                               untils TIMESTAMPTZ[], actors TEXT[],
                                               codes TEXT[], bodies JSONB[],
                                               sold_out_body JSONB)
RETURNS BIGINT[]
LANGUAGE plpgsql AS $$
DECLARE
    lim BIGINT;
    ok BOOLEAN;
    k BIGINT;
    ids BIGINT[];
    elig BOOLEAN[];
    seq REGCLASS := pg_get_serial_sequence('coupons', 'id')::regclass;
BEGIN
    SELECT per_user_limit, aborted_at IS NULL AND paused_at IS NULL
               AND approval IN ('none', 'approved')
               AND (activity_id IS NOT NULL OR published_at IS NOT NULL)
               AND claim_start <= at AND at < claim_end
      INTO lim, ok FROM templates WHERE id = t FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'template % not found', t USING ERRCODE = 'no_data_found';
    END IF;
    IF NOT ok THEN
        RETURN NULL;
    END IF;
    IF EXISTS (SELECT 1 FROM template_tags WHERE template_id = t) THEN
        SELECT array_agg(EXISTS (SELECT 1 FROM user_tags ut
                                 JOIN template_tags tt ON tt.tag = ut.tag
                                 WHERE tt.template_id = t AND ut.user_id = v.u) ORDER BY v.i)
          INTO elig FROM unnest(users) WITH ORDINALITY AS v(u, i);
    ELSE
        elig := array_fill(TRUE, ARRAY[cardinality(users)]);
    END IF;
    WITH taken AS (
        INSERT INTO holdings AS h (template_id, user_id, n)
        SELECT t, x.u, 1 FROM unnest(users, elig) AS x(u, e) WHERE x.e ORDER BY x.u
        ON CONFLICT (template_id, user_id) DO UPDATE SET n = h.n + 1 WHERE h.n < lim
        RETURNING user_id
    )
    SELECT array_agg(CASE WHEN NOT v.e THEN -2 WHEN tk.user_id IS NULL THEN 0 ELSE -1 END
                     ORDER BY v.i)
      INTO ids
      FROM unnest(users, elig) WITH ORDINALITY AS v(u, e, i)
      LEFT JOIN taken tk ON tk.user_id = v.u;
    SELECT COUNT(*) INTO k FROM unnest(ids) AS x WHERE x = -1;
    IF k = 0 THEN
        RETURN ids;
    END IF;
    SELECT array_agg(CASE WHEN x = -1 THEN nextval(seq) ELSE x END ORDER BY i) INTO ids
      FROM unnest(ids) WITH ORDINALITY AS v(x, i);
    INSERT INTO coupons (id, template_id, user_id, claimed_at, valid_from, valid_until,
                         updated_at, code)
    OVERRIDING SYSTEM VALUE
    SELECT id, t, u, at, f, un, at, c
      FROM unnest(ids, users, froms, untils, codes) AS v(id, u, f, un, c) WHERE id > 0;
    INSERT INTO coupon_events (coupon_id, to_status, actor, at)
    SELECT id, 'unused', a, at FROM unnest(ids, actors) AS v(id, a) WHERE id > 0;
    INSERT INTO outbox (kind, at, body)
    SELECT 'coupon.claimed', at, jsonb_set(b, '{coupon_id}', to_jsonb(id))
      FROM unnest(ids, bodies) AS v(id, b) WHERE id > 0;
    -- The stock last: the batch that takes the last coupon writes template.sold_out after its
    -- own coupon.claimed events. No single shard holding k aborts everything written above.
    IF NOT coupond_take_stock(t, k, start, FALSE, at, sold_out_body) THEN
        RAISE EXCEPTION 'no shard holds % coupons of template %', k, t USING ERRCODE = 'CPRTY';
    END IF;
    RETURN ids;
END
$$;
