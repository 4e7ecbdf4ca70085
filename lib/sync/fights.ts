import { fightDelayMs } from "./retry_policy.ts";

/**
 * Bounds the reaction to a fight: another writer (a tenant, a controller) changing an object that espejo restores,
 * again and again. Each restore espejo tries is a move, whether it was written or refused (a conflict with the other
 * writer's next change is a move too; lib/sync/retry_policy.ts decides). The first restore is immediate; each further
 * restore of the same object while the fight lasts waits twice as long as the one before (1 s, 2 s, 4 s, ...), at most
 * `maxDelayMs` (the reconcile interval), keyed on the object and never on its version. So a
 * fight costs a handful of writes a minute instead of one per change of the other writer, and the desired content
 * still wins within `maxDelayMs` of the other writer stopping.
 *
 * A fight ends when the object was left alone for twice the longest delay: its next change is restored at once.
 */
export class FightBook {
  readonly #fights = new Map<string, { restores: number; lastMs: number }>();

  constructor(
    private readonly maxDelayMs: number,
    private readonly now: () => number = () => performance.now(),
    private readonly maxEntries = 100_000,
  ) {}

  /** How long a restore of `key` must still wait (0: restore now). */
  waitMs(key: string): number {
    const fight = this.#current(key);
    if (!fight) return 0;
    return Math.max(0, fight.lastMs + this.#delay(fight.restores) - this.now());
  }

  /** Records a restore tried on `key`; returns how many this fight has had (1: the first, not a fight yet). */
  restored(key: string): number {
    const restores = (this.#current(key)?.restores ?? 0) + 1;
    this.#fights.delete(key); // re-inserted last: the oldest entry goes first when the book is full
    if (this.#fights.size >= this.maxEntries) this.#fights.delete(this.#fights.keys().next().value!);
    this.#fights.set(key, { restores, lastMs: this.now() });
    return restores;
  }

  /** Whether `key` had a restore recently (within the fight's memory): a conflict on it is the fight's next move. */
  inFight(key: string): boolean {
    return this.#current(key) !== undefined;
  }

  get size(): number {
    return this.#fights.size;
  }

  #delay(restores: number): number {
    return fightDelayMs(restores, this.maxDelayMs);
  }

  #current(key: string): { restores: number; lastMs: number } | undefined {
    const fight = this.#fights.get(key);
    if (fight && this.now() - fight.lastMs > 2 * this.maxDelayMs) {
      this.#fights.delete(key);
      return undefined;
    }
    return fight;
  }
}
