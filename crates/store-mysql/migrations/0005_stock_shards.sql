-- A template's stock, split into shards that claim batches take from independently (I1), as
-- on PostgreSQL (its migration 0015).
--
-- Before this, every claim batch of a template locked the template's row FOR UPDATE, so the
-- batches of every coupond process took turns on that one row lock, held through each
-- commit's flush. Now a batch shares the template's row and raises one shard's `claimed` by
-- its size, under a condition that keeps `claimed <= total`; batches on different shards do
-- not wait on each other, and InnoDB flushes their commits together.
--
-- Exact by construction: `sum(total) = templates.total_stock`, each shard's CHECK keeps
-- `claimed <= total`, and a batch that fits no single shard is run again in exact mode, which
-- locks every shard in shard order and takes what is left, shard by shard. A shard belongs to
-- no process: any batch of any process may take from any shard, so nothing is held by a
-- process that dies.

-- The template's own `claimed` goes (below, once copied), with the CHECK that names it. The
-- CHECK's name is the server's choice (MariaDB: CONSTRAINT_n, unique per table only; MySQL 8:
-- templates_chk_n), so it is looked up, before the shards' own CHECK exists.
SET @stock_check = (
    SELECT MIN(c.CONSTRAINT_NAME)
    FROM information_schema.CHECK_CONSTRAINTS c
    JOIN information_schema.TABLE_CONSTRAINTS t
      ON t.CONSTRAINT_SCHEMA = c.CONSTRAINT_SCHEMA AND t.CONSTRAINT_NAME = c.CONSTRAINT_NAME
    WHERE c.CONSTRAINT_SCHEMA = DATABASE() AND t.TABLE_NAME = 'templates'
      AND t.CONSTRAINT_TYPE = 'CHECK' AND c.CHECK_CLAUSE LIKE '%claimed%<=%total_stock%');
SET @drop_check = IF(@stock_check IS NULL, 'DO 0',
                     CONCAT('ALTER TABLE templates DROP CONSTRAINT ', @stock_check));
PREPARE drop_check FROM @drop_check;
EXECUTE drop_check;
DEALLOCATE PREPARE drop_check;

CREATE TABLE template_stock (
    template_id BIGINT NOT NULL,
    shard       INT    NOT NULL CHECK (shard >= 0),
    total       BIGINT NOT NULL CHECK (total >= 0),
    claimed     BIGINT NOT NULL DEFAULT 0,
    CHECK (claimed >= 0 AND claimed <= total),
    PRIMARY KEY (template_id, shard),
    FOREIGN KEY (template_id) REFERENCES templates (id)
) ENGINE=InnoDB;

-- Each template's stock in min(16, stock) shards, the coupons already claimed filled into
-- them in order (as `claims/stock.rs::split` lays it out when a template is written): shard
-- i holds stock / n, one more for the first stock mod n, and starts after i * q + min(i, r).
INSERT INTO template_stock (template_id, shard, total, claimed)
    SELECT id, i, size, LEAST(size, GREATEST(0, claimed - i * q - LEAST(i, r)))
    FROM (
        WITH RECURSIVE k (i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < 15)
        SELECT t.id, k.i, t.claimed,
               t.total_stock DIV LEAST(16, t.total_stock) AS q,
               t.total_stock MOD LEAST(16, t.total_stock) AS r,
               t.total_stock DIV LEAST(16, t.total_stock)
                   + (k.i < t.total_stock MOD LEAST(16, t.total_stock)) AS size
        FROM templates t JOIN k ON k.i < LEAST(16, t.total_stock)
    ) s;

ALTER TABLE templates DROP COLUMN claimed;
