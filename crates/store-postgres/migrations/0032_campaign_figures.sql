-- Campaign figures (issue 36; SQLite's 0030, MySQL's 0018).
--
-- How each coupon reached its holder: `channel` (`direct`, `listing:<id>`, `code:<batch>` or
-- `code:shared`, `issuance:<job>`, `service`) and the caller's own `source` label, if any.
-- Coupons from before were claimed directly unless their issuance job or code says otherwise.
ALTER TABLE coupons ADD COLUMN channel TEXT NOT NULL DEFAULT 'direct';
ALTER TABLE coupons ADD COLUMN source TEXT;
UPDATE coupons SET channel = 'issuance:' || issuance_id WHERE issuance_id IS NOT NULL;
UPDATE coupons c SET channel = 'code:' || COALESCE(k.batch_id::text, 'shared')
  FROM codes k WHERE k.code = c.code AND c.issuance_id IS NULL;

-- The value of each order at its lock (what the lock's quote computed): the order's total
-- before coupons, the discount they take and the platform's currency. Refunds take their
-- coupons' discount back (`refunded_discount`); the refund that gives back the order's last
-- used coupon marks the whole order refunded (`refunded_at`), its value no longer counting.
ALTER TABLE orders ADD COLUMN subtotal BIGINT;
ALTER TABLE orders ADD COLUMN discount BIGINT;
ALTER TABLE orders ADD COLUMN currency TEXT;
ALTER TABLE orders ADD COLUMN refunded_discount BIGINT NOT NULL DEFAULT 0;
ALTER TABLE orders ADD COLUMN refunded_at TIMESTAMPTZ;

-- The figures read orders confirmed or refunded in a period.
CREATE INDEX orders_by_end ON orders (ended_at) WHERE state = 'confirmed';
CREATE INDEX orders_by_refund ON orders (refunded_at) WHERE refunded_at IS NOT NULL;
-- Unused coupons expiring in a period: those the sweep marked expired, by validity (the
-- still-unused ones have `coupons_unused_by_expiry`).
CREATE INDEX coupons_expired_by_validity ON coupons (valid_until) WHERE status = 'expired';

-- The performance report's closed hours, kept once counted: per scope (`template:7`,
-- `activity:3`, `activity:3/merchant:2`, `platform`, ...), hour and channel (`*`: the hour's
-- orders, each counted once), with the `digest` of the scope's set of templates when counted:
-- a scope whose set changed (an activity gained a template) is counted afresh and its old
-- rows deleted, so each scope keeps one set of rows.
-- `figure_spans` marks each hour counted, quiet ones included. An hour is kept only once it
-- ended long enough ago that nothing stamped in it can still be written (the engine's
-- `performance` module says how long); unused coupons expiring are always counted afresh.
CREATE TABLE figure_hours (
    scope             TEXT        NOT NULL,
    hour              TIMESTAMPTZ NOT NULL,
    channel           TEXT        NOT NULL,
    digest            TEXT        NOT NULL,
    issued            BIGINT      NOT NULL,
    claimed           BIGINT      NOT NULL,
    locked            BIGINT      NOT NULL,
    used              BIGINT      NOT NULL,
    refunded          BIGINT      NOT NULL,
    revoked           BIGINT      NOT NULL,
    discount          BIGINT      NOT NULL,
    refunded_discount BIGINT      NOT NULL,
    orders            BIGINT      NOT NULL,
    order_value       BIGINT      NOT NULL,
    order_discount    BIGINT      NOT NULL,
    orders_refunded   BIGINT      NOT NULL,
    refunded_value    BIGINT      NOT NULL,
    PRIMARY KEY (scope, hour, channel)
);
CREATE TABLE figure_spans (
    scope  TEXT        NOT NULL,
    hour   TIMESTAMPTZ NOT NULL,
    digest TEXT        NOT NULL,
    PRIMARY KEY (scope, hour)
);

-- The plain claim path's function, now writing each coupon's channel and source: a new
-- overload (two more arguments). The old one stays, for instances on the previous version
-- during a rolling upgrade (their coupons are `direct`); a later migration drops it.
CREATE OR REPLACE FUNCTION coupond_claim_plain(t BIGINT, at TIMESTAMPTZ, start INT,
                                               users TEXT[], froms TIMESTAMPTZ[],
                                               untils TIMESTAMPTZ[], actors TEXT[],
                                               codes TEXT[], bodies JSONB[],
                                               sold_out_body JSONB, channels TEXT[],
                                               sources TEXT[])
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
                         updated_at, code, channel, source)
    OVERRIDING SYSTEM VALUE
    SELECT id, t, u, at, f, un, at, c, ch, so
      FROM unnest(ids, users, froms, untils, codes, channels, sources)
           AS v(id, u, f, un, c, ch, so) WHERE id > 0;
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
