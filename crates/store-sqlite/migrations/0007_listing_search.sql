-- Listing search walks listings in id order (the page order) and stops after a page: with
-- only a city given, this index gives that order without sorting the city's listings.
CREATE INDEX listings_by_city ON listings (city_id, id);
