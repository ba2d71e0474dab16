-- Reports: coupons used in a period (reconciliation), and per-hour activity from the log.
CREATE INDEX coupons_by_used_at ON coupons (used_at) WHERE used_at IS NOT NULL;
CREATE INDEX coupon_events_by_time ON coupon_events (at);
