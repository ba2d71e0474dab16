-- Bindings of templates to listings, and the listing search indexes.
-- `listings.bound` counts a listing's bindings; a bind increments it only while it is below
-- the configured maximum, in the same transaction as the binding row, so the limit holds
-- without any lock outside the database.

ALTER TABLE listings ADD COLUMN bound INTEGER NOT NULL DEFAULT 0 CHECK (bound >= 0);

CREATE TABLE bindings (
    listing_id  INTEGER NOT NULL REFERENCES listings (id),
    template_id INTEGER NOT NULL REFERENCES templates (id),
    bound_at    INTEGER NOT NULL,
    PRIMARY KEY (listing_id, template_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX bindings_by_template ON bindings (template_id, listing_id);
CREATE INDEX listings_by_place ON listings (city_id, category_id, id);
CREATE INDEX listings_by_merchant ON listings (merchant_id, id);
