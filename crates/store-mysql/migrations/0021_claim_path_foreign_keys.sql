-- The claim path's per-row foreign-key checks, dropped as on PostgreSQL (its migration 0015):
-- InnoDB checks each inserted coupon, holding and log row against its parent's primary key
-- and takes a shared lock on the parent's record, and each planned reminder against its
-- template. Every writer of these rows holds what they point at: a claim batch holds its
-- template's row in share mode (templates are never deleted), a coupon's log row is written
-- in the batch that writes the coupon, and reminders are planned from the events of existing
-- coupons. `coupond audit` checks that no coupon, holding, log row or reminder points at
-- nothing ("orphans"). The reminders' index on `template_id` existed only for its foreign key
-- (InnoDB made it); nothing reads reminders by template, so it goes too.
ALTER TABLE coupons DROP FOREIGN KEY coupons_ibfk_1;
ALTER TABLE holdings DROP FOREIGN KEY holdings_ibfk_1;
ALTER TABLE coupon_events DROP FOREIGN KEY coupon_events_ibfk_1;
ALTER TABLE reminders DROP FOREIGN KEY reminders_ibfk_1;
ALTER TABLE reminders DROP INDEX template_id;
