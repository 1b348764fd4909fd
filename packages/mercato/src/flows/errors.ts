/** Errors of the run engine. `retryable: false` fails the run at once, whatever the retry policy says. */
export class FlowError extends Error {
  readonly retryable: boolean;
  constructor(name: string, message: string, retryable: boolean) {
    super(message);
    this.name = name;
    this.retryable = retryable;
  }
}

/** The same step or sleep name used twice in one execution of a run. */
export class DeterminismError extends FlowError {
  constructor(message: string) {
    super('DeterminismError', message, false);
  }
}

export class StepResultTooLargeError extends FlowError {
  constructor(step: string, bytes: number, limit: number) {
    super('StepResultTooLargeError', `Step "${step}" returned ${bytes} bytes of JSON; the limit is ${limit} bytes`, true);
  }
}

export class StepResultNotSerializableError extends FlowError {
  constructor(step: string, reason: string) {
    super('StepResultNotSerializableError', `Step "${step}" returned a value that is not JSON-serialisable: ${reason}`, false);
  }
}

export class TimeoutError extends FlowError {
  constructor(what: string, ms: number) {
    super('TimeoutError', `${what} timed out after ${ms} ms`, true);
  }
}

/** The run was canceled, or its lease was lost, while this code ran: nothing more is stored. */
export class RunInterruptedError extends FlowError {
  constructor(reason: 'canceled' | 'lease-lost' | 'worker-stopping') {
    super('RunInterruptedError', `The run was interrupted (${reason})`, true);
  }
}

/** Thrown by ctx.sleep to unwind the flow; the engine parks the run as `sleeping`. Never catch it in flow code. */
export class SleepInterrupt extends Error {
  constructor(
    readonly stepName: string,
    readonly wakeAt: Date,
  ) {
    super(`sleeping until ${wakeAt.toISOString()} (${stepName})`);
    this.name = 'SleepInterrupt';
  }
}

export function serializeError(error: unknown): { name: string; message: string; stack?: string } {
  if (error instanceof Error) {
    return { name: error.name, message: error.message, ...(error.stack ? { stack: error.stack.split('\n').slice(0, 12).join('\n') } : {}) };
  }
  return { name: 'Error', message: typeof error === 'string' ? error : safeString(error) };
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
