/**
 * What the server added to espejo's last write of each item (`extrasHash`, lib/model/drift.ts), by item key
 * (SyncConfig, index, generation: `keysOf` in lib/sync/planner.ts). An object found without a baseline (after a
 * restart) is in sync when the fields its item does not set are exactly these. The first write of an item is what is
 * learnt; a later one of the same generation adds nothing new.
 *
 * Bounded (the oldest entry goes first), and a SyncConfig that goes or changes generation is forgotten: its entries
 * can never be asked for again (a new generation is a new key).
 */
export const MAX_LEARNT_ITEMS = 100_000;

export class ServerAdds {
  readonly #byItem = new Map<string, string>();

  constructor(private readonly max = MAX_LEARNT_ITEMS) {}

  /** What the server added to the last write of the item, if one was learnt. */
  get(itemKey: string): string | undefined {
    return this.#byItem.get(itemKey);
  }

  /** The first write of the item learns what the server added to it; later ones keep what was learnt. */
  learn(itemKey: string, extras: () => string): void {
    if (this.#byItem.has(itemKey)) return;
    if (this.#byItem.size >= this.max) this.#byItem.delete(this.#byItem.keys().next().value!);
    this.#byItem.set(itemKey, extras());
  }

  /** The SyncConfig went or changed generation: what its items learnt goes. */
  forgetConfig(cfgKey: string): void {
    const prefix = `${cfgKey}|`; // a SyncConfig key (namespace/name) holds no `|`
    for (const key of this.#byItem.keys()) if (key.startsWith(prefix)) this.#byItem.delete(key);
  }

  /** How many items have something learnt (for tests). */
  get size(): number {
    return this.#byItem.size;
  }
}
