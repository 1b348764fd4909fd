-- The live run view no longer rides on NOTIFY from row triggers (issue 18): a commit that sends a NOTIFY holds
-- PostgreSQL's cluster-wide notify lock through its WAL flush, so the triggers of 0007_run_watch serialized every
-- worker commit of every process. The watch (src/flows/watch.ts) now polls the watched runs' versions while someone
-- watches, one statement per process and interval.
DROP TRIGGER IF EXISTS runs_notify_update ON runs;
--> statement-breakpoint
DROP TRIGGER IF EXISTS steps_notify_change ON steps;
--> statement-breakpoint
DROP FUNCTION IF EXISTS mercato_notify_run_update();
