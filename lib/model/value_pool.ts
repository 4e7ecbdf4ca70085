/**
 * One copy of equal values that thousands of namespaces repeat (a namespace's counts, the SyncConfigs that select
 * it): 5,000 namespaces then share a handful of objects instead of holding 5,000 equal ones. Bounded: once `max`
 * distinct values are pooled, a new one is returned as it is (it costs its own copy, as without the pool), so values
 * that someone can vary without end cost no more than they did.
 *
 * Pooled values are shared: callers must not change them (they are frozen).
 */
export class ValuePool<T extends object> {
  readonly #values = new Map<string, T>();

  constructor(private readonly max = 1024) {}

  /** The pooled value equal to `value` (both named by `key`), or `value` itself, frozen, when there is none. */
  shared(key: string, value: T): T {
    const known = this.#values.get(key);
    if (known !== undefined) return known;
    Object.freeze(value);
    if (this.#values.size < this.max) this.#values.set(key, value);
    return value;
  }

  get size(): number {
    return this.#values.size;
  }
}
