CREATE INDEX "logs_run_level_idx" ON "logs" USING btree ("run_id","level","id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "logs_run_step_idx" ON "logs" USING btree ("run_id","step","id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "logs_message_trgm_idx" ON "logs" USING gin ("message" gin_trgm_ops);--> statement-breakpoint
CREATE INDEX "logs_data_idx" ON "logs" USING gin ("data" jsonb_path_ops);