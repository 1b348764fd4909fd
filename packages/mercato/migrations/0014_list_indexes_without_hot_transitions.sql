DROP INDEX "runs_tenant_created_idx";--> statement-breakpoint
DROP INDEX "runs_tenant_flow_created_idx";--> statement-breakpoint
DROP INDEX "runs_tenant_status_created_idx";--> statement-breakpoint
DROP INDEX "runs_active_flow_idx";--> statement-breakpoint
CREATE INDEX "runs_tenant_created_idx" ON "runs" USING btree ("app_handle","shop","created_at" DESC NULLS LAST,"id" DESC NULLS LAST) WHERE "runs"."status" <> 'running';--> statement-breakpoint
CREATE INDEX "runs_tenant_flow_created_idx" ON "runs" USING btree ("app_handle","shop","flow_name","created_at" DESC NULLS LAST,"id" DESC NULLS LAST) WHERE "runs"."status" <> 'running';--> statement-breakpoint
CREATE INDEX "runs_tenant_status_created_idx" ON "runs" USING btree ("app_handle","shop","status","created_at" DESC NULLS LAST,"id" DESC NULLS LAST) WHERE "runs"."status" in ('pending','sleeping','failed','canceled');--> statement-breakpoint
CREATE INDEX "runs_active_flow_idx" ON "runs" USING btree ("app_handle","shop","status","flow_name") WHERE "runs"."status" in ('pending','running','sleeping');