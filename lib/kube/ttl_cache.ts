/**
 * A map whose entries expire, with a bound on their number: when full, the least recently used entry goes, as
 * apimachinery's `LRUExpireCache` (which the delegating authorizer keeps its verdicts in) does. For verdicts whose
 * keys others choose: those of `--metrics-secure` (lib/app/metrics_auth.ts), where strangers send the tokens, and a
 * team's access reviews (lib/sync/rights.ts), where its SyncConfig names the namespaces and objects. Memory is at most
 * `max` entries, whatever they send.
 */
export class TtlCache<V> {
  readonly #entries = new Map<string, { value: V; until: number }>();

  constructor(readonly max: number, private readonly now: () => number = Date.now) {}

  get size(): number {
    return this.#entries.size;
  }

  /** The value, while it has not expired; a hit makes the entry the most recently used. */
  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    this.#entries.delete(key);
    if (entry.until <= this.now()) return undefined;
    this.#entries.set(key, entry);
    return entry.value;
  }

  /** Drops every entry whose key `drop` returns true for (a SyncConfig that went takes its verdicts with it). */
  deleteIf(drop: (key: string) => boolean): void {
    for (const key of [...this.#entries.keys()]) if (drop(key)) this.#entries.delete(key);
  }

  /** Keeps `value` for `ttlMs`, dropping the least recently used entry when the cache is full. */
  set(key: string, value: V, ttlMs: number): void {
    this.#entries.delete(key);
    if (this.#entries.size >= this.max) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(key, { value, until: this.now() + ttlMs });
  }
}
