/**
 * The label keys that the SyncConfigs' label selectors read, counted per SyncConfig. A namespace admin may put about
 * 1 MiB of labels on a namespace; a namespace whose labels are larger than a small bound keeps only these keys
 * (namespace_info.ts), so that its cost follows what SyncConfigs read, not what the admin wrote.
 *
 * Each SyncConfig counts the keys of its compiled generation (none while it is invalid), and a key goes with the last
 * SyncConfig that reads it: in delegated mode a team writes its own SyncConfig's selector, and what it read must not
 * outlive its edits or its deletion (issue 44: a set that only grew took 70 MiB in 80 edits of 2,000 fresh keys). A
 * selector reads at most MAX_SELECTOR_KEYS keys (selector_size.ts), so the set holds at most that many per SyncConfig.
 *
 * Versions. A namespace trimmed at {@link LabelKeys.version} `v` kept the keys held at `v`. Each key remembers the
 * version at which it last came in; the namespace has every key held now when none came in after `v`
 * ({@link LabelKeys.covers}). So a key that goes makes no namespace stale (and one that was stale only for keys that
 * went has its labels again, without a read), and only a key that comes in — new, or back after it went — does.
 * Such a namespace is read again before its selection counts (lib/controller/trimmed_labels.ts). A team that brings
 * fresh keys with every edit makes every trimmed namespace stale every time: that cost is bounded where the reads
 * are made, one sweep over the stale namespaces at most every SWEEP_GAP_MS however fast the edits come.
 */
import type { SyncConfig } from "./syncconfig.ts";

export class LabelKeys {
  /** By key: how many SyncConfigs read it, and the version at which it last came in. */
  readonly #keys = new Map<string, { readers: number; since: number }>();
  /** By SyncConfig key: the distinct keys its compiled generation reads. */
  readonly #readBy = new Map<string, readonly string[]>();
  #version = 0;
  /** The newest `since` of the keys held; undefined when a key that came in then went (found again when asked). */
  #newest: number | undefined = 0;

  /** Grows by one whenever a key comes in: a namespace trimmed at an older version may lack it. */
  get version(): number {
    return this.#version;
  }

  /** How many distinct keys are held. */
  get size(): number {
    return this.#keys.size;
  }

  has(key: string): boolean {
    return this.#keys.has(key);
  }

  /** The keys SyncConfig `cfgKey` reads now, as {@link read} was last told. */
  readBy(cfgKey: string): readonly string[] {
    return this.#readBy.get(cfgKey) ?? [];
  }

  /**
   * SyncConfig `cfgKey` reads `keys` from now on (its keys before go unless another reads them); true when a key came
   * in, and the version grew.
   */
  read(cfgKey: string, keys: Iterable<string>): boolean {
    const next = [...new Set(keys)];
    const before = this.#readBy.get(cfgKey) ?? [];
    let came = false;
    for (const key of next) {
      const held = this.#keys.get(key);
      if (held) {
        held.readers++;
        continue;
      }
      if (!came) this.#version++;
      came = true;
      this.#keys.set(key, { readers: 1, since: this.#version });
    }
    for (const key of before) {
      const held = this.#keys.get(key)!;
      if (--held.readers > 0) continue;
      this.#keys.delete(key);
      if (held.since === this.#newest) this.#newest = undefined;
    }
    if (next.length) this.#readBy.set(cfgKey, next);
    else this.#readBy.delete(cfgKey);
    if (came) this.#newest = this.#version;
    return came;
  }

  /** SyncConfig `cfgKey` went (or reads nothing now): its keys go unless another reads them. */
  drop(cfgKey: string): void {
    this.read(cfgKey, []);
  }

  /**
   * Whether a namespace whose labels were trimmed at version `labelsFor` has every key SyncConfig `cfgKey` reads
   * (undefined: kept whole, it has them all): its selection by that SyncConfig is known, whatever keys others brought
   * in since. So a team whose edits bring fresh keys makes only its own selection unknown, not the platform's.
   */
  coversFor(cfgKey: string, labelsFor: number | undefined): boolean {
    if (labelsFor === undefined) return true;
    return this.readBy(cfgKey).every((key) => (this.#keys.get(key)?.since ?? Infinity) <= labelsFor);
  }

  /**
   * Whether a namespace whose labels were trimmed at version `labelsFor` has every key held now (undefined: kept
   * whole, it has them all).
   */
  covers(labelsFor: number | undefined): boolean {
    if (labelsFor === undefined) return true;
    this.#newest ??= Math.max(0, ...[...this.#keys.values()].map((k) => k.since));
    return this.#newest <= labelsFor;
  }
}

/** The label keys `.spec.namespaceSelector.labelSelector` reads: its matchLabels and matchExpressions keys. */
export function selectorKeys(sc: SyncConfig): string[] {
  const selector = sc.spec?.namespaceSelector?.labelSelector;
  const keys: string[] = [];
  const matchLabels = selector?.matchLabels;
  if (matchLabels && typeof matchLabels === "object") keys.push(...Object.keys(matchLabels));
  for (const e of Array.isArray(selector?.matchExpressions) ? selector.matchExpressions : []) {
    if (typeof e?.key === "string") keys.push(e.key);
  }
  return keys;
}
