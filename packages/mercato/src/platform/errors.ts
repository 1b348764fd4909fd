/** Errors of the Admin GraphQL client. None of them carries the access token. */

export interface GraphqlErrorEntry {
  message: string;
  locations?: Array<{ line: number; column: number }>;
  path?: Array<string | number>;
  extensions?: Record<string, unknown>;
}

/** Cost extension of an Admin GraphQL answer (`extensions.cost`). */
export interface QueryCost {
  requestedQueryCost: number | null;
  actualQueryCost: number | null;
  throttleStatus: { maximumAvailable: number; currentlyAvailable: number; restoreRate: number };
}

export class AdminApiError extends Error {
  constructor(
    message: string,
    readonly shop: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** The app has no active installation on the shop (never installed, or uninstalled). Not retryable by waiting. */
export class NotInstalledError extends AdminApiError {
  /** A run failing with it is not retried by its retry policy. */
  readonly retryable = false;

  constructor(appHandle: string, shop: string) {
    super(
      `The app "${appHandle}" is not installed on ${shop} (no active installation): open the app from the shop's admin to install it`,
      shop,
    );
  }
}

/** The platform answered with GraphQL errors (HTTP 200 with `errors`). `data` holds what was resolved, if anything. */
export class AdminGraphqlError extends AdminApiError {
  constructor(
    shop: string,
    readonly errors: GraphqlErrorEntry[],
    readonly data: unknown,
    readonly extensions: Record<string, unknown> | undefined,
  ) {
    super(`Admin GraphQL error from ${shop}: ${errors.map((e) => e.message).join('; ') || 'unknown error'}`, shop);
  }

  /** `extensions.code` of the errors (THROTTLED, MAX_COST_EXCEEDED, ACCESS_DENIED, ...). */
  get codes(): string[] {
    return this.errors.map((e) => e.extensions?.code).filter((c): c is string => typeof c === 'string');
  }
}

/** Still throttled after the allowed number of waits. */
export class AdminThrottledError extends AdminGraphqlError {
  constructor(
    shop: string,
    errors: GraphqlErrorEntry[],
    extensions: Record<string, unknown> | undefined,
    readonly attempts: number,
  ) {
    super(shop, errors, null, extensions);
    this.message = `Admin GraphQL request to ${shop} still throttled after ${attempts} attempts`;
  }
}

/** An HTTP failure: a non-2xx answer (after the retries for 429 and 5xx), a body that is not JSON, or no answer at all. */
export class AdminHttpError extends AdminApiError {
  constructor(
    shop: string,
    /** null when the request got no answer (network error, timeout). */
    readonly status: number | null,
    readonly body: unknown,
    message?: string,
  ) {
    super(message ?? `Admin API request to ${shop} failed with HTTP ${status}`, shop);
  }
}
