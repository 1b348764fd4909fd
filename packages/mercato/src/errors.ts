/**
 * Domain errors: what went wrong, in the words of the capability that found it. They carry no HTTP status; the HTTP
 * layer maps each class to one (the table in http/errors.ts), MCP maps them to JSON-RPC errors, and flow or route code
 * may catch them by class. `details` holds the extra fields a client needs (`field`, `issues`, `existingRunId`, …);
 * it never holds a secret.
 */

/** Base class of every domain error. */
export class DomainError extends Error {
  /** Extra fields for the answer (`{ error: message, ...details }` over HTTP). */
  readonly details: Record<string, unknown>;

  constructor(message: string, details: Record<string, unknown> = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.details = details;
  }
}

/** One problem found by a schema check: where (`path`), what (`message`) and the rule (`code`). */
export interface InputIssue {
  path: string;
  message: string;
  code: string;
}

/** The input (a body, a query parameter, a flow input, an option) is not acceptable: names the field and the issues. */
export class InvalidInputError extends DomainError {
  /** The request field at fault, when one is (`shop`, `limit`, `input.email`, …). */
  readonly field?: string;
  /** Every issue a schema check found, when a schema was used. */
  readonly issues?: unknown[];

  constructor(message: string, options: { field?: string; issues?: unknown[]; details?: Record<string, unknown> } = {}) {
    const details: Record<string, unknown> = { ...options.details };
    if (options.field !== undefined) details.field = options.field;
    if (options.issues !== undefined) details.issues = options.issues;
    super(message, details);
    if (options.field !== undefined) this.field = options.field;
    if (options.issues !== undefined) this.issues = options.issues;
  }
}

/** The thing asked for does not exist for this tenant (another tenant's row is reported the same way). */
export class NotFoundError extends DomainError {
  constructor(message = 'Not found', details: Record<string, unknown> = {}) {
    super(message, details);
  }
}

/** The request conflicts with the current state (a run already active, a name taken, a state that does not allow it). */
export class ConflictError extends DomainError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super(message, details);
  }
}

/** The caller is known but may not do this. */
export class ForbiddenError extends DomainError {
  constructor(message = 'Forbidden', details: Record<string, unknown> = {}) {
    super(message, details);
  }
}

/** A dependency outside Mercato (the platform, a provider) failed; `details` says which and how, without secrets. */
export class UpstreamError extends DomainError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super(message, details);
  }
}
