/**
 * A token bucket like client-go's `flowcontrol.NewTokenBucketRateLimiter`: up to `burst` requests at once, refilled
 * at `qps` per second. Urgent waiters (status and Event writes: a few, and what users watch) go before the others, so
 * a SyncConfig's status does not wait behind thousands of another SyncConfig's queued writes.
 *
 * The others are served round-robin by flow, as API Priority and Fairness serves its queues: a flow is the namespace
 * a request acts in ({@link flowOf}), so one namespace with many requests waiting (a tenant fighting espejo, a
 * SyncConfig's burst) cannot make another namespace's first request wait more than one turn of the round, one
 * request of each other flow that has waiters. Within a flow, arrival order. A flow exists while it has waiters and
 * is forgotten with its last one: the bucket keeps nothing per namespace.
 */
interface Waiter {
  resolve: () => void;
}

/** The flow of requests that act in no namespace (cluster-scoped objects, lists across namespaces, discovery). */
export const CLUSTER_FLOW = "";

const NAMESPACED = /^\/(?:api\/[^/]+|apis\/[^/]+\/[^/]+)\/namespaces\/([^/]+)\/./;

/**
 * The flow of a request to API path `path`: the namespace of a namespaced resource's path
 * (`/api/v1/namespaces/a/configmaps/b` is flow `a`), {@link CLUSTER_FLOW} for everything else, the Namespace object
 * `/api/v1/namespaces/a` itself included.
 */
export function flowOf(path: string): string {
  return NAMESPACED.exec(path)?.[1] ?? CLUSTER_FLOW;
}

export class TokenBucket {
  #tokens: number;
  #last: number;
  readonly #urgent: Waiter[] = [];
  /** Flows with waiters, in the order of their next turn: the first is served next, then goes last if it has more. */
  readonly #flows = new Map<string, Waiter[]>();
  #timer?: ReturnType<typeof setTimeout>;

  constructor(
    readonly qps: number,
    readonly burst: number,
    // Monotonic: a wall clock stepped back (NTP) would stall every request until it catches up.
    private readonly now: () => number = () => performance.now(),
  ) {
    this.#tokens = burst;
    this.#last = now();
  }

  /**
   * Resolves when a request of flow `flow` may be sent; rejects when `signal` aborts first. A qps of 0 or less is
   * unlimited.
   */
  take(signal?: AbortSignal, urgent = false, flow = CLUSTER_FLOW): Promise<void> {
    if (this.qps <= 0) return Promise.resolve();
    signal?.throwIfAborted();
    return new Promise<void>((resolve, reject) => {
      let queue = this.#urgent;
      if (!urgent) {
        queue = this.#flows.get(flow) ?? [];
        this.#flows.set(flow, queue); // a new flow's first turn comes after every flow waiting now
      }
      const onAbort = () => {
        const i = queue.indexOf(waiter);
        if (i >= 0) queue.splice(i, 1);
        if (!urgent && !queue.length && this.#flows.get(flow) === queue) this.#flows.delete(flow);
        reject(signal!.reason);
      };
      const waiter: Waiter = {
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      queue.push(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#serve();
    });
  }

  /** Number of flows with waiters (for tests: nothing is kept for a flow without them). */
  get flows(): number {
    return this.#flows.size;
  }

  /** Hands out the tokens there are, urgent waiters first; sleeps until the next token when some wait. */
  #serve(): void {
    if (this.#timer !== undefined) return;
    while (this.#urgent.length || this.#flows.size) {
      const now = this.now();
      this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#last) / 1000) * this.qps);
      this.#last = now;
      if (this.#tokens < 1) {
        const waitMs = Math.ceil(((1 - this.#tokens) / this.qps) * 1000);
        this.#timer = setTimeout(() => {
          this.#timer = undefined;
          this.#serve();
        }, waitMs);
        return;
      }
      this.#tokens -= 1;
      this.#next().resolve();
    }
  }

  /** Takes the waiter whose turn it is: the first urgent one, else the first of the flow first in the round. */
  #next(): Waiter {
    const urgent = this.#urgent.shift();
    if (urgent) return urgent;
    const [flow, queue] = this.#flows.entries().next().value!;
    const waiter = queue.shift()!;
    this.#flows.delete(flow);
    if (queue.length) this.#flows.set(flow, queue); // its next turn comes after every other flow's
    return waiter;
  }
}
