CREATE TABLE "provider_configs" (
	"app_handle" text NOT NULL,
	"shop" text NOT NULL,
	"provider" text NOT NULL,
	"config" jsonb NOT NULL,
	"last_checked_at" timestamp with time zone,
	"last_check_ok" boolean,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "provider_configs_app_handle_shop_provider_pk" PRIMARY KEY("app_handle","shop","provider")
);
