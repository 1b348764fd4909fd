CREATE TABLE "mcp_audits" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "mcp_audits_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"token_id" uuid NOT NULL,
	"app_handle" text NOT NULL,
	"shop" text NOT NULL,
	"kind" text NOT NULL,
	"capability" text NOT NULL,
	"permissions" jsonb NOT NULL,
	"required_permissions" jsonb NOT NULL,
	"status" text NOT NULL,
	"error" text,
	"duration_ms" integer NOT NULL,
	"request_id" text,
	"target_shop" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "mcp_audits_kind_check" CHECK ("mcp_audits"."kind" in ('tool','resource')),
	CONSTRAINT "mcp_audits_status_check" CHECK ("mcp_audits"."status" in ('ok','error','denied','timeout'))
);
--> statement-breakpoint
CREATE TABLE "mcp_hash_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"secret" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "mcp_tokens" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"app_handle" text NOT NULL,
	"shop" text NOT NULL,
	"name" text NOT NULL,
	"permissions" jsonb NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"secret_hash" text NOT NULL,
	"hash_key_id" text NOT NULL,
	"fingerprint" text NOT NULL,
	"expires_at" timestamp with time zone,
	"last_used_at" timestamp with time zone,
	"revoked_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "mcp_tokens_status_check" CHECK ("mcp_tokens"."status" in ('active','disabled','revoked'))
);
--> statement-breakpoint
ALTER TABLE "mcp_audits" ADD CONSTRAINT "mcp_audits_token_id_mcp_tokens_id_fk" FOREIGN KEY ("token_id") REFERENCES "public"."mcp_tokens"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "mcp_audits_token_idx" ON "mcp_audits" USING btree ("token_id","id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "mcp_tokens_tenant_created_idx" ON "mcp_tokens" USING btree ("app_handle","shop","created_at" DESC NULLS LAST);