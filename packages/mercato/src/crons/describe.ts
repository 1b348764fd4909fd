/**
 * A cron expression in English words ("Every 5 minutes", "At 09:00, Monday through Friday") for the API and the admin
 * UI, worded by `cronstrue` (24-hour times). Only the forms croner schedules for us are described (5 or 6 fields,
 * the @nicknames below); anything else, or anything cronstrue cannot read, is null, so callers show the expression.
 */
import cronstrue from 'cronstrue';

const NICKNAMES: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};
const FIELDS_RE = /^\S+(?:\s+\S+){4,5}$/;

export function describeSchedule(expression: string): string | null {
  const trimmed = expression.trim();
  const fields = NICKNAMES[trimmed.toLowerCase()] ?? trimmed;
  if (!FIELDS_RE.test(fields)) return null;
  try {
    return cronstrue.toString(fields, { use24HourTimeFormat: true, throwExceptionOnParseError: true, verbose: false });
  } catch {
    return null;
  }
}
