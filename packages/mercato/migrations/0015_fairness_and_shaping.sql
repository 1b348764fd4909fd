CREATE TABLE "rate_starts" (
	"key" text NOT NULL,
	"at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "priority" smallint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "concurrency_key" text;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "rate_key" text;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "debounce_key" text;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "wait" jsonb;--> statement-breakpoint
CREATE INDEX "rate_starts_key_at_idx" ON "rate_starts" USING btree ("key","at");--> statement-breakpoint
CREATE INDEX "runs_fair_idx" ON "runs" USING btree ("app_handle",coalesce("shop", ''),"priority" DESC NULLS LAST,"available_at") WHERE "runs"."status" in ('pending','sleeping') and "runs"."concurrency_key" is null and "runs"."rate_key" is null;--> statement-breakpoint
CREATE INDEX "runs_gated_idx" ON "runs" USING btree ("app_handle",coalesce("shop", ''),"priority" DESC NULLS LAST,"available_at") WHERE "runs"."status" in ('pending','sleeping') and ("runs"."concurrency_key" is not null or "runs"."rate_key" is not null);--> statement-breakpoint
CREATE INDEX "runs_concurrency_key_idx" ON "runs" USING btree ("concurrency_key","status") WHERE "runs"."concurrency_key" is not null and "runs"."status" in ('pending','running','sleeping');--> statement-breakpoint
CREATE UNIQUE INDEX "runs_debounce_idx" ON "runs" USING btree ("debounce_key") WHERE "runs"."debounce_key" is not null and "runs"."status" = 'pending';