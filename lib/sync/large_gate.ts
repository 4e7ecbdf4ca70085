/**
 * Turns at the work on large objects, one namespace at a time. Reading an object whose content the cache did not keep
 * for its size, and writing one whose ownerReferences it did not keep (a tenant may add about 1 MiB of them to any
 * object espejo syncs in its namespace), each hold MiBs while they run: one such piece of work at a time keeps memory
 * bounded whatever tenants write. But a unit that waited for another namespace's turn would hold its worker
 * meanwhile, and a tenant inflating objects in as many namespaces as there are workers would hold them all, so that a
 * restore in any other namespace waited behind the tenant's turns (issue 44: 7-15 s where idle it takes 0.06 s).
 *
 * So no unit waits here for another namespace. An item finds the turn free (or kept for its namespace) and takes it;
 * or finds it held by its own namespace, whose unit is doing its large work, and goes next, one after the other (a
 * turn lasts as long as that unit's large work: its items, which SyncConfigs name, not what a tenant writes); or its
 * namespace is put in line and the item is left for later, the unit ends and its worker goes on. When the turn comes
 * free it is kept for the first namespace in line, which is queued again ({@link LargeGate.offer}); its next unit
 * takes it, or gives it up when it ends without needing it (its object changed meanwhile), and the turn passes on.
 *
 * The gate makes no request and keeps no timer: the executor runs large work through it (`tryRun`), the namespace
 * unit tells it when a unit begins and ends, and a namespace that goes is forgotten (lib/controller/key_books.ts).
 */

export class LargeGate {
  /** The namespace whose item holds the turn; undefined while it is free. */
  #holder?: string;
  /** Items of the holder's namespace waiting to go next, in order. */
  readonly #next: (() => void)[] = [];
  /** The namespace a free turn is kept for, and whether a unit of it has begun since it was offered. */
  #kept?: { namespace: string; begun: boolean };
  /** Namespaces in line for the turn, in the order they came. */
  readonly #line = new Set<string>();

  /** `offer`: the turn is kept for `namespace`, whose next unit should come soon (the controller queues it). */
  constructor(private readonly offer: (namespace: string) => void = () => {}) {}

  /**
   * Runs `task` in `namespace`'s turn: at once if the turn is free and kept for no other namespace (`task` starts
   * before this returns, in the same turn of the event loop), after the namespace's items before it if it holds the
   * turn; then the turn goes to the next. Undefined, and the namespace in line (once, in the place it first came to),
   * if another namespace has the turn: the item is left for the namespace's next unit.
   */
  async tryRun<T>(namespace: string, task: () => Promise<T>): Promise<{ value: T } | undefined> {
    if (this.#holder === namespace) await new Promise<void>((go) => this.#next.push(go));
    else if (this.#holder === undefined && (!this.#kept || this.#kept.namespace === namespace)) {
      this.#kept = undefined;
      this.#line.delete(namespace);
      this.#holder = namespace;
    } else {
      this.#line.add(namespace);
      return undefined;
    }
    try {
      return { value: await task() };
    } finally {
      const next = this.#next.shift();
      if (next) next(); // the namespace's next item, as the turn is
      else {
        this.#holder = undefined;
        this.#passOn();
      }
    }
  }

  /** A unit of `namespace` begins: a turn kept for the namespace is this unit's to take. */
  began(namespace: string): void {
    if (this.#kept?.namespace === namespace) this.#kept.begun = true;
  }

  /**
   * A unit of `namespace` ended: a turn kept for it before the unit began and not taken passes on. One kept for it
   * while the unit ran is its next unit's (the offer queued it again).
   */
  ended(namespace: string): void {
    if (this.#kept?.namespace !== namespace || !this.#kept.begun) return;
    this.#kept = undefined;
    this.#passOn();
  }

  /** The namespace went: out of line, and a turn kept for it passes on. */
  forget(namespace: string): void {
    this.#line.delete(namespace);
    if (this.#kept?.namespace !== namespace) return;
    this.#kept = undefined;
    this.#passOn();
  }

  /** The namespaces waiting for the turn, the one a free turn is kept for first (for tests and the debug log). */
  get waiting(): string[] {
    return [...(this.#kept ? [this.#kept.namespace] : []), ...this.#line];
  }

  /** A free turn, kept for no one, goes to the first namespace in line, which is offered it. */
  #passOn(): void {
    if (this.#holder !== undefined || this.#kept) return;
    const next = this.#line.values().next();
    if (next.done) return;
    this.#line.delete(next.value);
    this.#kept = { namespace: next.value, begun: false };
    this.offer(next.value);
  }
}
