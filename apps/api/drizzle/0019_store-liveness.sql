CREATE TABLE `store_liveness` (
	`id` integer PRIMARY KEY DEFAULT 1 NOT NULL,
	`last_seen_at_ms` integer NOT NULL,
	`last_outage_at_ms` integer,
	`last_outage_source` text,
	CONSTRAINT "store_liveness_single_row_check" CHECK(id = 1),
	CONSTRAINT "store_liveness_seen_check" CHECK(last_seen_at_ms >= 0),
	CONSTRAINT "store_liveness_outage_check" CHECK((last_outage_at_ms IS NULL AND last_outage_source IS NULL) OR (last_outage_at_ms <= last_seen_at_ms AND last_outage_source IN ('tick_gap', 'instance_observed')))
);
