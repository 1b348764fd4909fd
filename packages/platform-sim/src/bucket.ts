/**
 * The platform's cost bucket for one (app, shop): it holds at most `max` points, refills continuously at `restoreRate`
 * points per second, must hold the requested cost before a query runs, and is refunded the difference between the
 * requested and the actual cost afterwards.
 */
export interface BucketConfig {
  /** Capacity in cost points (the platform's default is 1000). */
  max: number;
  /** Points restored per second (the platform's default is 50). */
  restoreRate: number;
}

export const DEFAULT_BUCKET: Readonly<BucketConfig> = Object.freeze({ max: 1000, restoreRate: 50 });

export interface ThrottleStatus {
  maximumAvailable: number;
  currentlyAvailable: number;
  restoreRate: number;
}

export class CostBucket {
  private available: number;
  private updatedAt: number;

  constructor(
    readonly config: BucketConfig,
    private readonly now: () => number = Date.now,
  ) {
    this.available = config.max;
    this.updatedAt = now();
  }

  private refill(): void {
    const t = this.now();
    this.available = Math.min(this.config.max, this.available + ((t - this.updatedAt) / 1000) * this.config.restoreRate);
    this.updatedAt = t;
  }

  /** Reserves `cost` points; false (nothing taken) when the bucket holds fewer. */
  take(cost: number): boolean {
    this.refill();
    if (cost > this.available) return false;
    this.available -= cost;
    return true;
  }

  refund(points: number): void {
    this.refill();
    this.available = Math.min(this.config.max, this.available + Math.max(0, points));
  }

  status(): ThrottleStatus {
    this.refill();
    return { maximumAvailable: this.config.max, currentlyAvailable: Math.floor(this.available), restoreRate: this.config.restoreRate };
  }
}
