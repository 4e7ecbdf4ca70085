/**
 * The book of items' attempts, keyed by SyncConfig, item and namespace, with exponential backoff and jitter (the work
 * the queue hands out backs off in the queue: lib/controller/queue.ts).
 * An entry is tied to an attempt (what was tried: the SyncConfig generation, the desired object and, unless it is a
 * restore, the live object's version), so a changed attempt is tried at once whatever the backoff of the old one.
 * What goes in is decided by lib/sync/retry_policy.ts.
 *
 * Retriable failures wait 1 s, doubling to 5 min. Terminal ones (see lib/sync/failures.ts) wait for the attempt to
 * change, or for an hour: a permanently rejected item costs nothing per pass, and a fix that espejo cannot see (an
 * RBAC change, an admission webhook) is still picked up, as controller-runtime's periodic resync would.
 *
 * Deleting a SyncConfig or a namespace is one call: {@link RetryBook.forgetConfig}, {@link RetryBook.forgetNamespace}.
 */
import { exponentialMs, jitter } from "../kube/backoff.ts";
import { BASE_DELAY_MS, MAX_DELAY_MS, TERMINAL_HOLD_MS } from "./retry_policy.ts";

export interface RetryScope {
  cfgKey?: string;
  namespace?: string;
}

export interface RetryOptions {
  baseMs?: number;
  maxMs?: number;
  terminalMs?: number;
  maxEntries?: number;
  /** A factor applied to each delay; default ±20 % at random. */
  jitter?: () => number;
  now?: () => number;
}

interface Entry<R> extends RetryScope {
  attempt: string;
  failures: number;
  until: number;
  result: R;
}

export class RetryBook<R> {
  readonly #entries = new Map<string, Entry<R>>();
  readonly #o: Required<RetryOptions>;

  constructor(o: RetryOptions = {}) {
    this.#o = {
      baseMs: BASE_DELAY_MS,
      maxMs: MAX_DELAY_MS,
      terminalMs: TERMINAL_HOLD_MS,
      maxEntries: 100_000,
      jitter,
      now: () => performance.now(),
      ...o,
    };
  }

  /** The result of the failed `attempt` of `key` while it still waits; undefined: try now. */
  waiting(key: string, attempt: string): R | undefined {
    const e = this.#entries.get(key);
    return e && e.attempt === attempt && this.#o.now() < e.until ? e.result : undefined;
  }

  /** Failures of `key` in a row (of any attempt). */
  failures(key: string): number {
    return this.#entries.get(key)?.failures ?? 0;
  }

  /**
   * Records a failure of `attempt`; returns how long the next try of the same attempt must wait. `baseMs`: the first
   * wait of this key's back-off, when not the book's.
   */
  failed(key: string, attempt: string, result: R, terminal: boolean, scope: RetryScope = {}, baseMs?: number): number {
    const before = this.#entries.get(key);
    const failures = (before?.attempt === attempt ? before.failures : 0) + 1;
    const delay = terminal
      ? this.#o.terminalMs
      : Math.round(exponentialMs(failures, baseMs ?? this.#o.baseMs, this.#o.maxMs) * this.#o.jitter());
    this.#entries.delete(key); // re-inserted last: the oldest entry goes first when the book is full
    if (this.#entries.size >= this.#o.maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(key, { ...scope, attempt, failures, until: this.#o.now() + delay, result });
    return delay;
  }

  /** `key` succeeded: its next failure starts the backoff over. */
  succeeded(key: string): void {
    // Every item in sync says so, 100,000 after a restart, nearly always to an empty book: a key is hashed only when
    // there is something to find.
    if (this.#entries.size > 0) this.#entries.delete(key);
  }

  forgetConfig(cfgKey: string): void {
    for (const [key, e] of this.#entries) if (e.cfgKey === cfgKey) this.#entries.delete(key);
  }

  forgetNamespace(namespace: string): void {
    for (const [key, e] of this.#entries) if (e.namespace === namespace) this.#entries.delete(key);
  }

  get size(): number {
    return this.#entries.size;
  }
}
