ALTER TABLE `effect_reconciliations` ADD `adapter_package` text;--> statement-breakpoint
ALTER TABLE `effect_reconciliations` ADD `adapter_package_version` text;--> statement-breakpoint
ALTER TABLE `effect_reconciliations` ADD `adapter_declaration_hash` text;