-- A quote or a lock whose template tests customer.first_order or customer.orders counts the
-- user's confirmed orders (issue 63): an index by user keeps that a short range read.
CREATE INDEX orders_by_user ON orders (user_id, state);
