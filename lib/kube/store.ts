/**
 * What a reflector keeps per object (by `namespace/name`): the decoded value with the object's resourceVersion and
 * uid. A cache may hold 100,000 of them, so each is kept as small as its value allows:
 * - a value that carries the object's resourceVersion and uid itself (the managed objects' `CachedObject`) is its own
 *   entry, without a wrapper;
 * - a value that the cache's {@link Packing} can write as one string once it has settled (a managed object judged,
 *   its content dropped) is kept as that string, a third of the object with its strings. It is packed right after the
 *   synchronous code that was handed it (and judged it) has run, and unpacked into a new value each time it is read
 *   again; code that changes such a copy after an await puts it back with {@link ObjectStore.settled}. Packed
 *   entries are kept a namespace's to a string (lib/kube/packed_groups.ts), without a map entry each.
 */
import { PackedGroups } from "./packed_groups.ts";
import { compactUid, fullUid } from "./compact_uid.ts";

/** Turns a settled value into one string and back; `pack` says undefined while the value may still change. */
export interface Packing<T> {
  pack(value: T): string | undefined;
  unpack(packed: string, resourceVersion: string, uid: string): T;
}

/** An entry of the store: read it with the store's `valueOf`, `versionOf` and `uidOf`. */
export type Entry = { readonly __entry: never };

/** The entry of a value that does not carry the object's version itself. */
class Wrapped<T> {
  constructor(readonly value: T, readonly resourceVersion: string, readonly uid: string | undefined) {}
}

/** Fields a packed entry starts with, before the packing's own; separated by a newline. */
const SEP = "\n";

export class ObjectStore<T> {
  /** Values, and packed entries that are not grouped. A key is in one of the two, or in neither. */
  #entries = new Map<string, unknown>();
  #groups = new PackedGroups();
  /** Keys handed out or stored since the last look: packed (if they settled) once the current code has run. */
  readonly #toPack = new Set<string>();
  #packQueued = false;

  constructor(private readonly packing?: Packing<T>) {}

  /** A new, empty store that packs as this one does. */
  emptyLike(): ObjectStore<T> {
    return new ObjectStore(this.packing);
  }

  /**
   * Takes over the entries of `other` (made by {@link emptyLike}), which is left empty: a cache's first list moves
   * into its empty store without a copy, so its objects are never held twice.
   */
  takeOver(other: ObjectStore<T>): void {
    [this.#entries, other.#entries] = [other.#entries, new Map()];
    [this.#groups, other.#groups] = [other.#groups, new PackedGroups()];
    for (const key of this.#entries.keys()) this.#schedulePack(key);
  }

  get size(): number {
    return this.#entries.size + this.#groups.size;
  }

  /** The value at `key`; its caller may settle it, so it is looked at for packing right after. */
  get(key: string): T | undefined {
    const e = this.entry(key);
    if (e === undefined) return undefined;
    this.#schedulePack(key);
    return this.valueOf(e);
  }

  /**
   * `value`, handed out at `key` earlier, settled after an await: packed once the current code has run. A packed
   * entry handed out a copy, which may have learnt something since (a verdict): the copy is put back, unless the
   * object changed meanwhile (another version, or gone).
   */
  settled(key: string, value: T | undefined): void {
    const e = this.entry(key);
    if (e === undefined) return;
    if (typeof e === "string" && value !== undefined) {
      const v = value as { resourceVersion?: unknown; uid?: unknown };
      const [rv, storedUid, stored] = fields(e);
      if (v.resourceVersion === rv && v.uid === fullUid(storedUid)) {
        // A copy that packs as the entry does leaves it (its group's string) as it is; one that learnt something is
        // put back with the uid as it is stored, not compacted again (a restart's units settle 25,000 such records).
        const packed = this.packing!.pack(value);
        if (packed === stored) return;
        this.put(
          key,
          packed === undefined ? this.make(value, rv, v.uid) : [rv, storedUid, packed].join(SEP) as unknown as Entry,
        );
        return;
      }
    }
    this.#schedulePack(key);
  }

  /** The entry at `key`; a grouped one is a slice of its group's string (read it, do not keep it). */
  entry(key: string): Entry | undefined {
    return (this.#entries.get(key) ?? this.#groups.get(key)) as Entry | undefined;
  }

  /**
   * The entry of `value` for the object at `resourceVersion` and `uid` (not stored yet: see {@link put}); packed at
   * once if it has settled already (an object judged as a list brought it: thousands wait in a list's state).
   */
  make(value: T, resourceVersion: string, uid: string | undefined): Entry {
    const v = value as { resourceVersion?: unknown; uid?: unknown } | null;
    const carries = typeof v === "object" && v !== null && !(v instanceof Wrapped) &&
      v.resourceVersion === resourceVersion && v.uid === uid;
    const entry = (carries ? value : new Wrapped(value, resourceVersion, uid)) as unknown as Entry;
    return this.#packed(entry) ?? entry;
  }

  put(key: string, entry: Entry): void {
    if (typeof entry === "string" && this.#groups.set(key, entry)) {
      this.#entries.delete(key);
      return;
    }
    this.#groups.delete(key);
    this.#entries.set(key, entry);
    this.#schedulePack(key);
  }

  set(key: string, value: T, resourceVersion: string, uid: string | undefined): void {
    this.put(key, this.make(value, resourceVersion, uid));
  }

  delete(key: string): void {
    if (!this.#entries.delete(key)) this.#groups.delete(key);
  }

  /** Every entry; one stored meanwhile may be seen twice or not at all (as with a Map's, read them synchronously). */
  *entries(): Generator<[string, Entry]> {
    for (const [k, e] of this.#entries) yield [k, e as Entry];
    for (const [k, e] of this.#groups.entries()) yield [k, e as unknown as Entry];
  }

  valueOf(e: Entry): T {
    if (typeof e === "string") {
      const [rv, uid, packed] = split(e);
      return this.packing!.unpack(packed, rv, uid);
    }
    return e instanceof Wrapped ? e.value : e as unknown as T;
  }

  // Only the field asked for is read from a packed entry: decoding its uid costs more than the rest of a read.
  versionOf(e: Entry): string {
    if (typeof e !== "string") return (e as unknown as Wrapped<T>).resourceVersion;
    const packed = e as unknown as string;
    return packed.slice(0, packed.indexOf(SEP));
  }

  uidOf(e: Entry): string | undefined {
    if (typeof e !== "string") return (e as unknown as Wrapped<T>).uid;
    const packed = e as unknown as string;
    const a = packed.indexOf(SEP);
    return fullUid(packed.slice(a + 1, packed.indexOf(SEP, a + 1)));
  }

  #schedulePack(key: string): void {
    if (!this.packing) return;
    this.#toPack.add(key);
    if (this.#packQueued) return;
    this.#packQueued = true;
    queueMicrotask(() => this.#pack());
  }

  #pack(): void {
    this.#packQueued = false;
    for (const key of this.#toPack) {
      const e = this.#entries.get(key) as Entry | undefined;
      const packed = e && this.#packed(e);
      if (packed === undefined) continue;
      if (this.#groups.set(key, packed as unknown as string)) this.#entries.delete(key);
      else this.#entries.set(key, packed);
    }
    this.#toPack.clear();
  }

  /** The packed form of entry `e`, or undefined while its value may change (or it cannot be packed). */
  #packed(e: Entry): Entry | undefined {
    if (!this.packing || typeof e === "string") return undefined;
    const rv = this.versionOf(e);
    const uid = this.uidOf(e);
    if (uid === undefined || rv.includes(SEP) || uid.includes(SEP)) return undefined;
    const storedUid = compactUid(uid);
    // A uid kept as it is must not look compacted (it would read back as another); a compacted one reads back.
    if (storedUid === uid && fullUid(uid) !== uid) return undefined;
    const packed = this.packing.pack(this.valueOf(e));
    // Joined, not concatenated: a concatenation is a tree of the parts it was made of, which it keeps alive.
    return packed === undefined ? undefined : [rv, storedUid, packed].join(SEP) as unknown as Entry;
  }
}

/** A packed entry's version, uid as stored (compacted) and the packing's part. */
function fields(e: string): [string, string, string] {
  const a = e.indexOf(SEP);
  const b = e.indexOf(SEP, a + 1);
  return [e.slice(0, a), e.slice(a + 1, b), e.slice(b + 1)];
}

function split(e: string): [string, string, string] {
  const [rv, uid, packed] = fields(e);
  return [rv, fullUid(uid), packed];
}
