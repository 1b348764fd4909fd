CREATE TABLE "installations" (
	"app_handle" text NOT NULL,
	"shop" text NOT NULL,
	"access_token" jsonb,
	"scopes" text,
	"status" text NOT NULL,
	"installed_at" timestamp with time zone DEFAULT now() NOT NULL,
	"uninstalled_at" timestamp with time zone,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "installations_app_handle_shop_pk" PRIMARY KEY("app_handle","shop"),
	CONSTRAINT "installations_status_check" CHECK ("installations"."status" in ('active','uninstalled')),
	CONSTRAINT "installations_token_check" CHECK ("installations"."status" <> 'active' or "installations"."access_token" is not null)
);
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"app_handle" text NOT NULL,
	"webhook_id" text NOT NULL,
	"event_id" text,
	"shop" text NOT NULL,
	"topic" text NOT NULL,
	"run_id" uuid,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "webhook_deliveries_app_handle_webhook_id_pk" PRIMARY KEY("app_handle","webhook_id")
);
--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_deliveries_event_idx" ON "webhook_deliveries" USING btree ("app_handle","topic","event_id") WHERE "webhook_deliveries"."event_id" is not null;--> statement-breakpoint
CREATE INDEX "webhook_deliveries_received_idx" ON "webhook_deliveries" USING btree ("received_at");