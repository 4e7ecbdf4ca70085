/**
 * The label keys that some SyncConfig's label selector reads. A namespace admin may put about 1 MiB of labels on a
 * namespace; a namespace whose labels are larger than a small bound keeps only these keys (namespace_info.ts), so
 * that its cost follows what SyncConfigs read, not what the admin wrote.
 *
 * The set only grows in a process (its keys come from SyncConfig authors, who are trusted, and are a few dozen):
 * a namespace trimmed before a key came is then stale ({@link LabelKeys.version}) and must be read again before
 * its selection means anything.
 */
import type { SyncConfig } from "./syncconfig.ts";

export class LabelKeys {
  readonly #keys = new Set<string>();
  #version = 0;

  /** Grows by one whenever a key is added: a namespace trimmed at an older version may lack one. */
  get version(): number {
    return this.#version;
  }

  has(key: string): boolean {
    return this.#keys.has(key);
  }

  /** Adds the keys `sc`'s label selector reads; true when one was new. */
  addFrom(sc: SyncConfig): boolean {
    let added = false;
    for (const key of selectorKeys(sc)) {
      if (this.#keys.has(key)) continue;
      this.#keys.add(key);
      added = true;
    }
    if (added) this.#version++;
    return added;
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
