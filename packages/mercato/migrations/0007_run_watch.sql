-- Live run updates for the admin UI (src/flows/watch.ts): every visible change of a run or of one of its steps sends
-- NOTIFY mercato_run_updates '<run id>', so a long poll on GET /api/runs/:id/watch answers at once, from any process.
-- Lease heartbeats change neither updated_at nor status, so they notify nothing.
CREATE OR REPLACE FUNCTION mercato_notify_run_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_TABLE_NAME = 'steps' THEN
    PERFORM pg_notify('mercato_run_updates', NEW.run_id::text);
  ELSE
    PERFORM pg_notify('mercato_run_updates', NEW.id::text);
  END IF;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
DROP TRIGGER IF EXISTS runs_notify_update ON runs;
--> statement-breakpoint
CREATE TRIGGER runs_notify_update AFTER UPDATE ON runs FOR EACH ROW
  WHEN (OLD.updated_at IS DISTINCT FROM NEW.updated_at OR OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION mercato_notify_run_update();
--> statement-breakpoint
DROP TRIGGER IF EXISTS steps_notify_change ON steps;
--> statement-breakpoint
CREATE TRIGGER steps_notify_change AFTER INSERT OR UPDATE ON steps FOR EACH ROW
  EXECUTE FUNCTION mercato_notify_run_update();
