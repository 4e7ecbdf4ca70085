/**
 * Which namespaces an interval pass can skip because syncing them again would decide exactly what the last sync
 * decided.
 *
 * A namespace's sync is a pure function of what it reads from the caches: the compiled SyncConfigs (and which
 * SyncConfigs exist), the namespace's labels and phase, and the cached objects in that namespace. Every change to
 * those inputs is reported here. A namespace whose last sync wrote nothing and failed nothing, and whose inputs have
 * not changed since that sync started, is "fresh": a pass over 1000 such namespaces is a thousand map lookups
 * instead of a thousand renders, hashes and comparisons.
 *
 * Freshness expires after `maxAgeMs`, so every namespace is still compared in full now and then; that costs no
 * request either and bounds the damage of a change that was not reported here.
 */
export class Freshness {
  /** Counts reported changes; a sync remembers the count at its start. */
  #clock = 0;
  /** The count at the last change that concerns every namespace. */
  #everywhere = 0;
  readonly #changedIn = new Map<string, number>();
  /** By namespace: when (ms) its last sync found it fresh. A number, not an object: one per namespace. */
  readonly #fresh = new Map<string, number>();

  constructor(private readonly maxAgeMs: number) {}

  /** A SyncConfig was added, changed or removed: every namespace must be compared again. */
  changedEverywhere(): void {
    this.#everywhere = ++this.#clock;
    this.#fresh.clear();
  }

  /** Something a sync of `namespace` reads changed (the namespace itself or an object in it). */
  changedIn(namespace: string): void {
    this.#changedIn.set(namespace, ++this.#clock);
    this.#fresh.delete(namespace);
  }

  /** The namespace is gone: forget it. */
  forget(namespace: string): void {
    this.#changedIn.delete(namespace);
    this.#fresh.delete(namespace);
  }

  /** Call when a sync starts reading; pass the result to {@link synced}. */
  begin(): number {
    return this.#clock;
  }

  /**
   * A sync that started at `startedAt` finished; `noop` when it wrote and failed nothing. Changes reported while it
   * ran are newer than `startedAt`, so they keep the namespace stale.
   */
  synced(namespace: string, startedAt: number, noop: boolean, nowMs: number): void {
    const changed = Math.max(this.#everywhere, this.#changedIn.get(namespace) ?? 0);
    if (noop && changed <= startedAt) this.#fresh.set(namespace, nowMs);
    else this.#fresh.delete(namespace);
  }

  isFresh(namespace: string, nowMs: number): boolean {
    const at = this.#fresh.get(namespace);
    return at !== undefined && nowMs - at < this.maxAgeMs;
  }

  get size(): number {
    return this.#fresh.size;
  }
}
