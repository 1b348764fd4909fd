/**
 * The final write's retries and its log lines (flows/final-write.ts): a database that is away is an outage, logged at
 * warn with its reason and no stack (the probe's N5: two error lines with stacks per outage); any other failure that
 * outlasts the retries is an error with the error itself.
 */
import { describe, expect, it } from 'vitest';
import { writeFinalState } from '../../src/flows/final-write.ts';
import { capturingLogger } from '../kit/index.ts';

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

describe('writeFinalState', () => {
  it('retries; a database that stays away is logged at warn with its reason and no stack, never at error', async () => {
    const { logger, lines } = capturingLogger('debug');
    let calls = 0;
    const stored = await writeFinalState({ logger, finalWriteRetryDelaysMs: [1, 1] }, { runId: 'r1' }, 'completed', async () => {
      calls++;
      throw refused();
    });
    expect(stored).toBe(false);
    expect(calls).toBe(3);
    expect(lines.map((l) => [l.level, l.reason, l.err === undefined])).toEqual([
      [40, 'ECONNREFUSED', true],
      [40, 'ECONNREFUSED', true],
      [40, 'ECONNREFUSED', true],
    ]);
    expect(JSON.stringify(lines)).not.toContain('stack');
  });

  it('stores once the database answers again; any other failure that outlasts the retries is an error with the error', async () => {
    const { logger, lines } = capturingLogger('debug');
    let calls = 0;
    expect(
      await writeFinalState({ logger, finalWriteRetryDelaysMs: [1] }, { runId: 'r2' }, 'completed', async () => {
        if (++calls === 1) throw refused();
        return true;
      }),
    ).toBe(true);
    expect(lines).toHaveLength(1);
    lines.length = 0;
    expect(
      await writeFinalState({ logger, finalWriteRetryDelaysMs: [1] }, { runId: 'r3' }, 'failed', async () => {
        throw new Error('value too long for type character varying(10)');
      }),
    ).toBe(false);
    expect(lines.at(-1)).toMatchObject({ level: 50, runId: 'r3', err: expect.anything() });
  });
});
