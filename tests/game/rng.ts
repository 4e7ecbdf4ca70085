/**
 * The game's only source of chance: mulberry32, a 32-bit PRNG small enough to read, so that a seed replays the same
 * game on any machine. Each move gets its own generator derived from (seed, move index), so leaving a move out (see
 * PENDING_FIXES) does not change what the other moves of the same seed do.
 */
export class Rng {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("Rng.pick of an empty list");
    return items[Math.floor(this.next() * items.length)];
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  /** A short lowercase word, for values a move writes. */
  word(): string {
    return this.int(0, 36 ** 5).toString(36);
  }

  /** A generator for sub-game `index` of this seed (independent of how many draws were made so far). */
  static derive(seed: number, index: number): Rng {
    return new Rng(Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) + Math.imul(index + 1, 0xc2b2ae35));
  }
}
