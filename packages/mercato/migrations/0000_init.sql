CREATE TABLE "runs" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"app_handle" text NOT NULL,
	"shop" text,
	"flow_name" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"trigger" text NOT NULL,
	"input" jsonb NOT NULL,
	"output" jsonb,
	"error" jsonb,
	"attempt" integer DEFAULT 0 NOT NULL,
	"attempt_base" integer DEFAULT 0 NOT NULL,
	"same_attempt" boolean DEFAULT false NOT NULL,
	"lost_leases" integer DEFAULT 0 NOT NULL,
	"retry_policy" jsonb NOT NULL,
	"available_at" timestamp with time zone DEFAULT now() NOT NULL,
	"lease_owner" text,
	"lease_expires_at" timestamp with time zone,
	"parent_run_id" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "runs_status_check" CHECK ("runs"."status" in ('pending','running','sleeping','completed','failed','canceled'))
);
--> statement-breakpoint
CREATE TABLE "steps" (
	"run_id" uuid NOT NULL,
	"name" text NOT NULL,
	"app_handle" text NOT NULL,
	"shop" text,
	"status" text NOT NULL,
	"attempt" integer NOT NULL,
	"result" jsonb,
	"error" jsonb,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	CONSTRAINT "steps_run_id_name_pk" PRIMARY KEY("run_id","name"),
	CONSTRAINT "steps_status_check" CHECK ("steps"."status" in ('running','completed','failed','sleeping'))
);
--> statement-breakpoint
CREATE TABLE "logs" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "logs_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"run_id" uuid NOT NULL,
	"app_handle" text NOT NULL,
	"shop" text,
	"level" text NOT NULL,
	"message" text NOT NULL,
	"data" jsonb,
	"step" text,
	"attempt" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
	CONSTRAINT "logs_level_check" CHECK ("logs"."level" in ('info','warn','error'))
);
--> statement-breakpoint
ALTER TABLE "steps" ADD CONSTRAINT "steps_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "logs" ADD CONSTRAINT "logs_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "runs_tenant_created_idx" ON "runs" USING btree ("app_handle","shop","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "runs_tenant_flow_created_idx" ON "runs" USING btree ("app_handle","shop","flow_name","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "runs_tenant_status_created_idx" ON "runs" USING btree ("app_handle","shop","status","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "runs_claimable_idx" ON "runs" USING btree ("available_at") WHERE "runs"."status" in ('pending','sleeping');--> statement-breakpoint
CREATE INDEX "runs_lease_idx" ON "runs" USING btree ("lease_expires_at") WHERE "runs"."status" = 'running';--> statement-breakpoint
CREATE INDEX "runs_active_flow_idx" ON "runs" USING btree ("app_handle","shop","flow_name") WHERE "runs"."status" in ('pending','running','sleeping');--> statement-breakpoint
CREATE INDEX "logs_run_idx" ON "logs" USING btree ("run_id","id" DESC NULLS LAST);