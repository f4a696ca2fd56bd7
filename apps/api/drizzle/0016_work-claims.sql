CREATE TABLE `work_claims` (
	`kind` text NOT NULL,
	`key` text NOT NULL,
	`holder` text NOT NULL,
	`holder_instance_id` text NOT NULL,
	`claimed_at_ms` integer NOT NULL,
	`expires_at_ms` integer NOT NULL,
	PRIMARY KEY(`kind`, `key`),
	CONSTRAINT "work_claims_kind_check" CHECK(kind IN ('driver_finalization', 'maintenance_sweep')),
	CONSTRAINT "work_claims_key_check" CHECK(length(key) BETWEEN 1 AND 200),
	CONSTRAINT "work_claims_holder_check" CHECK(length(holder) = 26 AND length(holder_instance_id) = 26),
	CONSTRAINT "work_claims_expiry_check" CHECK(expires_at_ms > claimed_at_ms)
);
