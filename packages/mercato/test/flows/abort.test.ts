import { describe, expect, it } from 'vitest';
import { Abort, raceAbort } from '../../src/flows/abort.ts';

describe('Abort: an execution abort state whose AbortSignal is made on first use', () => {
  it('a signal taken before the abort aborts with the same reason, and so does one taken after', () => {
    const abort = new Abort();
    const early = abort.signal;
    expect(early.aborted).toBe(false);
    expect(abort.signal).toBe(early); // one signal per state
    const heard: unknown[] = [];
    early.addEventListener('abort', () => heard.push(early.reason));
    const reason = new Error('canceled');
    abort.abort(reason);
    abort.abort(new Error('second')); // only the first abort counts
    expect(abort.aborted).toBe(true);
    expect(abort.reason).toBe(reason);
    expect(heard).toEqual([reason]);

    const late = new Abort();
    late.abort(reason);
    expect(late.signal.aborted).toBe(true);
    expect(late.signal.reason).toBe(reason);
  });

  it('listeners run once, in order, and a removed one does not', () => {
    const abort = new Abort();
    const calls: string[] = [];
    abort.onAbort(() => calls.push('a'));
    const off = abort.onAbort(() => calls.push('b'));
    abort.onAbort((r) => calls.push(`c:${String(r)}`));
    off();
    abort.abort('why');
    abort.abort('again');
    expect(calls).toEqual(['a', 'c:why']);
    abort.onAbort(() => calls.push('too late')); // already aborted: never called
    expect(calls).toEqual(['a', 'c:why']);
  });

  it('a step state follows its run: the run aborts it, its own abort leaves the run alone, and unfollowing detaches it', () => {
    const run = new Abort();
    const timedOut = new Abort();
    timedOut.follow(run);
    timedOut.abort('step timeout');
    expect(run.aborted).toBe(false);

    const step = new Abort();
    step.follow(run);
    const detached = new Abort();
    const unfollow = detached.follow(run);
    unfollow();
    run.abort('canceled');
    expect(step.reason).toBe('canceled');
    expect(step.signal.reason).toBe('canceled');
    expect(detached.aborted).toBe(false);

    const afterwards = new Abort();
    afterwards.follow(run); // the run had already aborted
    expect(afterwards.reason).toBe('canceled');
  });

  it('raceAbort settles like the promise, or rejects with the reason as soon as the state aborts', async () => {
    const abort = new Abort();
    await expect(raceAbort(Promise.resolve(7), abort)).resolves.toBe(7);
    await expect(raceAbort(Promise.reject(new Error('flow threw')), abort)).rejects.toThrow('flow threw');
    const never = new Promise<number>(() => {});
    const raced = raceAbort(never, abort);
    abort.abort(new Error('lease lost'));
    await expect(raced).rejects.toThrow('lease lost');
    await expect(raceAbort(Promise.resolve(1), abort)).rejects.toThrow('lease lost'); // already aborted
  });
});
