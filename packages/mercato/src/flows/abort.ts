/**
 * The abort state of one execution (and of a step with a timeout), without an AbortController per run: the engine
 * checks `aborted` and `reason` and races the flow against `onAbort`, and an AbortSignal (what `ctx.signal` and a step's
 * `signal` are) is made only when the flow asks for one. A run whose code never reads a signal costs no EventTarget, no
 * listener and no abort event (docs/architecture.md "The run's hot path").
 */
export class Abort {
  aborted = false;
  reason: unknown = undefined;
  #controller: AbortController | undefined;
  #listeners: Set<(reason: unknown) => void> | undefined;

  /** Aborts once (later calls do nothing): the signal handed out, if any, then the listeners, in the order they came. */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.#controller?.abort(reason);
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (listeners) for (const listener of listeners) listener(reason);
  }

  /** An AbortSignal that follows this state, made on first use (already aborted when this is). */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.aborted) this.#controller.abort(this.reason);
    }
    return this.#controller.signal;
  }

  /** Calls `listener` once when this aborts (never when it already has); returns what removes it. */
  onAbort(listener: (reason: unknown) => void): () => void {
    if (this.aborted) return () => {};
    (this.#listeners ??= new Set()).add(listener);
    return () => void this.#listeners?.delete(listener);
  }

  /** Aborts with `reason` when `parent` does (a step's state follows its run's); returns what unlinks them. */
  follow(parent: Abort): () => void {
    if (parent.aborted) {
      this.abort(parent.reason);
      return () => {};
    }
    return parent.onAbort((reason) => this.abort(reason));
  }
}

/** Resolves or rejects like `promise`, or rejects with the abort's reason as soon as it aborts. */
export function raceAbort<T>(promise: Promise<T>, abort: Abort): Promise<T> {
  if (abort.aborted) {
    promise.catch(() => {});
    return Promise.reject(abort.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const off = abort.onAbort(reject);
    promise.then(
      (v) => {
        off();
        resolve(v);
      },
      (e) => {
        off();
        reject(e);
      },
    );
  });
}
