/** The process logger never writes the parameters of a failing database statement (flow inputs, provider configs). */
import { sql } from 'drizzle-orm';
import { expect, it } from 'vitest';
import { describeEngines } from '../../src/db/testing.ts';
import { createLogger } from '../../src/logger.ts';

const SECRET = 'sk_live_do_not_log_me';

describeEngines('logger', (get) => {
  const capture = () => {
    const lines: string[] = [];
    return { lines, logger: createLogger({ level: 'info', destination: { write: (line: string) => void lines.push(line) } }) };
  };
  const failingInsert = () =>
    sql`insert into runs (app_handle, flow_name, trigger, input, retry_policy, status) values ('default', 'f', 'api', ${JSON.stringify({ apiKey: SECRET })}::jsonb, '{}'::jsonb, 'bogus')`;

  it('strips query parameters from a database error (the driver error and the drizzle wrapper alike)', async () => {
    const { lines, logger } = capture();
    const driverError = await get()
      .db.query(failingInsert())
      .catch((e: unknown) => e);
    const drizzleError = await get()
      .db.orm.execute(failingInsert())
      .catch((e: unknown) => e);
    for (const error of [driverError, drizzleError]) expect(error).toBeInstanceOf(Error);
    logger.error({ err: driverError, runId: 'r1' }, 'write failed');
    logger.warn({ error: drizzleError }, 'write failed again');
    const plainObject = { message: 'not an error object', params: [SECRET] };
    logger.error({ err: plainObject }, 'plain');
    expect(lines).toHaveLength(3);
    const [first, second, plain] = lines.map((l) => JSON.parse(l));
    expect(lines.join('\n')).not.toContain(SECRET);
    expect(first.err.message).toMatch(/runs_status_check/);
    expect(first.runId).toBe('r1');
    if ('params' in first.err) expect(first.err.params).toBe('[redacted]');
    expect(JSON.stringify(second.error)).toContain('[redacted]');
    expect(plain.err).toEqual({ message: 'not an error object', params: '[redacted]' });
    expect(plainObject.params).toEqual([SECRET]); // a copy is scrubbed, the caller's object is untouched
  });
});
