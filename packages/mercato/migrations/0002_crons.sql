CREATE TABLE "cron_overrides" (
	"app_handle" text NOT NULL,
	"shop" text NOT NULL,
	"cron_key" text NOT NULL,
	"enabled" boolean NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "cron_overrides_app_handle_shop_cron_key_pk" PRIMARY KEY("app_handle","shop","cron_key")
);
--> statement-breakpoint
CREATE TABLE "cron_ticks" (
	"app_handle" text NOT NULL,
	"shop" text NOT NULL,
	"cron_key" text NOT NULL,
	"fire_at" timestamp with time zone NOT NULL,
	"status" text NOT NULL,
	"reason" text,
	"run_id" uuid,
	"scheduler_id" text NOT NULL,
	"claimed_at" timestamp with time zone NOT NULL,
	CONSTRAINT "cron_ticks_app_handle_shop_cron_key_fire_at_pk" PRIMARY KEY("app_handle","shop","cron_key","fire_at"),
	CONSTRAINT "cron_ticks_status_check" CHECK ("cron_ticks"."status" in ('dispatched','conflict','skipped','failed'))
);
--> statement-breakpoint
CREATE INDEX "cron_ticks_fire_at_idx" ON "cron_ticks" USING btree ("fire_at");