ALTER TABLE "mcp_audits" DROP CONSTRAINT "mcp_audits_kind_check";--> statement-breakpoint
ALTER TABLE "mcp_audits" DROP CONSTRAINT "mcp_audits_status_check";--> statement-breakpoint
ALTER TABLE "mcp_audits" ADD CONSTRAINT "mcp_audits_kind_check" CHECK ("mcp_audits"."kind" in ('tool','resource','request'));--> statement-breakpoint
ALTER TABLE "mcp_audits" ADD CONSTRAINT "mcp_audits_status_check" CHECK ("mcp_audits"."status" in ('ok','error','denied','timeout','refused'));