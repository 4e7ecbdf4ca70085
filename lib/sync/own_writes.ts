/**
 * espejo's own writes and deletes under way, told apart from everyone else's changes: the one place that knows which
 * watch events are the echo of espejo's own write. The echo, which may come before the write's reply, must not cause
 * another sync of the namespace (a unit that finds nothing to do, and would reset the count of what the last one
 * deleted), nor count as someone else's removal; a change by someone else meanwhile still must, and is told apart by
 * version. Also kept here: the objects an item names that someone else deleted or took espejo's label off, until espejo
 * writes them again (writing one is then a restore, which backs off in a fight like any other).
 *
 * Keys are opaque (ResourceCaches uses `resource|namespace/name`).
 */

/** At most this many objects are remembered as removed by someone else; the oldest goes first. */
const MAX_REMOVED = 10_000;

export class OwnWrites {
  /** Writes under way: the versions they produced, and the last version a watch event brought meanwhile. */
  readonly #writing = new Map<string, { ours: Set<string>; seen?: string }>();
  readonly #removed = new Set<string>();

  /** espejo's write or delete of `key` begins. */
  begin(key: string): void {
    this.#writing.set(key, { ours: new Set() });
  }

  /** espejo's write of `key` produced `resourceVersion` (its reply). */
  produced(key: string, resourceVersion: string): void {
    this.#writing.get(key)?.ours.add(resourceVersion);
  }

  /** Whether espejo's write or delete of `key` is under way. */
  writing(key: string): boolean {
    return this.#writing.has(key);
  }

  /**
   * A watch event brought `resourceVersion` of `key`. True while espejo writes it: the event waits for the write's end
   * to be told apart ({@link end}); false otherwise, when it is someone else's change.
   */
  arrived(key: string, resourceVersion: string): boolean {
    const writing = this.#writing.get(key);
    if (writing) writing.seen = resourceVersion;
    return writing !== undefined;
  }

  /** espejo's write of `key` ended. True when a version it did not produce arrived meanwhile: someone else's change. */
  end(key: string): boolean {
    const writing = this.#writing.get(key);
    this.#writing.delete(key);
    return writing?.seen !== undefined && !writing.ours.has(writing.seen);
  }

  /**
   * espejo's delete of `key` ended. `deleted`: the object is gone or going, and its removal is no one else's (returns
   * false); else as {@link end}.
   */
  endDelete(key: string, deleted: boolean): boolean {
    if (!deleted) return this.end(key);
    this.#writing.delete(key);
    this.#removed.delete(key);
    return false;
  }

  /** Someone else deleted `key` or took espejo's label off. */
  removed(key: string): void {
    this.#removed.delete(key); // re-inserted last: the oldest goes first when full (a namespace of 10,000 went)
    if (this.#removed.size >= MAX_REMOVED) this.#removed.delete(this.#removed.values().next().value!);
    this.#removed.add(key);
  }

  /** Whether someone else removed `key` since espejo last wrote it. */
  removedByOther(key: string): boolean {
    return this.#removed.has(key);
  }

  /** espejo wrote `key` again. */
  rewritten(key: string): void {
    this.#removed.delete(key);
  }
}
