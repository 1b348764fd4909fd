ALTER TABLE "logs" ADD COLUMN "body_seq" integer;--> statement-breakpoint
CREATE INDEX "logs_run_body_seq_idx" ON "logs" USING btree ("run_id","body_seq") WHERE "logs"."body_seq" is not null;