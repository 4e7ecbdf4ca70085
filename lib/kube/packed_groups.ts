/**
 * Packed store entries (lib/kube/store.ts) kept one string per namespace rather than one map entry each. At 120,000
 * cached objects a map entry with its `namespace/name` key costs about 85 bytes before its value, more than half of a
 * packed entry; in a namespace's string an entry costs its name and two separators. A namespace's objects of one kind
 * are few where espejo writes them (one per SyncConfig that has an item of the kind), so rewriting the string on a
 * change costs little.
 *
 * Anyone can label objects as espejo's, so a group holds at most {@link GROUP_MAX} entries (the store keeps the
 * others one map entry each, as before): a tenant's 10,000 labelled objects in one namespace never make a change
 * rewrite a megabyte. Only names that cannot hold the separators are grouped (DNS names: a Role's name may hold
 * almost any character).
 */

/** Starts a record: the name follows, then {@link NAME_END}, then the packed entry. */
const RECORD = "\x1e";
const NAME_END = "\x1f";
export const GROUP_MAX = 32;
const GROUPABLE_NAME = /^[a-z0-9][a-z0-9.-]*$/;
const GROUPABLE_NAMESPACE = /^[a-z0-9][a-z0-9-]*$/;

/** A grouped key's namespace and name, or undefined when it cannot be grouped. */
function split(key: string): [string, string] | undefined {
  const slash = key.indexOf("/");
  if (slash <= 0) return undefined;
  const namespace = key.slice(0, slash);
  const name = key.slice(slash + 1);
  return GROUPABLE_NAMESPACE.test(namespace) && GROUPABLE_NAME.test(name) ? [namespace, name] : undefined;
}

export class PackedGroups {
  readonly #groups = new Map<string, string>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  get(key: string): string | undefined {
    const at = split(key);
    const group = at && this.#groups.get(at[0]);
    if (!group) return undefined;
    const found = find(group, at[1]);
    return found && copy(group.slice(found.valueStart, found.end));
  }

  /**
   * Stores `packed` at `key`, replacing what was there; false (nothing stored, nothing changed) when the key cannot be
   * grouped, `packed` holds a separator, or the group is full and `key` is not in it.
   */
  set(key: string, packed: string): boolean {
    const at = split(key);
    if (!at || packed.includes(RECORD) || packed.includes(NAME_END)) return false;
    const [namespace, name] = at;
    const group = this.#groups.get(namespace) ?? "";
    const found = find(group, name);
    if (!found && records(group) >= GROUP_MAX) return false;
    const rest = found ? [group.slice(0, found.start), group.slice(found.end)] : [group];
    // Joined, not concatenated: a concatenation is a tree of its parts, which it keeps alive.
    this.#groups.set(namespace, [...rest, RECORD, name, NAME_END, packed].join(""));
    if (!found) this.#size++;
    return true;
  }

  delete(key: string): boolean {
    const at = split(key);
    const group = at && this.#groups.get(at[0]);
    if (!group) return false;
    const [namespace, name] = at;
    const found = find(group, name);
    if (!found) return false;
    this.#size--;
    const rest = copy([group.slice(0, found.start), group.slice(found.end)].join(""));
    if (rest === "") this.#groups.delete(namespace);
    else this.#groups.set(namespace, rest);
    return true;
  }

  /**
   * Every grouped entry as [key, packed], each a copy; a group changed meanwhile is read as it was when its turn came.
   */
  *entries(): Generator<[string, string]> {
    for (const [namespace, group] of this.#groups) {
      let start = group.indexOf(RECORD);
      while (start >= 0) {
        const nameEnd = group.indexOf(NAME_END, start);
        const next = group.indexOf(RECORD, nameEnd);
        const end = next < 0 ? group.length : next;
        yield [`${namespace}/${group.slice(start + 1, nameEnd)}`, copy(group.slice(nameEnd + 1, end))];
        start = next;
      }
    }
  }
}

/**
 * A string of its own with the text of `s`. A slice of 13 characters or more is a view that keeps its whole parent
 * alive, and a join with an empty part is the other part itself: a record read from a group, or a group that lost its
 * first or last record, would keep the old group string alive for as long as it is held (a baseline carried into a
 * later version of an object holds it for good).
 */
function copy(s: string): string {
  return s.length < 2 ? s : [s.slice(0, 1), s.slice(1)].join("");
}

/** How many records `group` holds (counted when a name is added: a count kept per namespace would cost more). */
function records(group: string): number {
  let n = 0;
  for (let i = group.indexOf(RECORD); i >= 0; i = group.indexOf(RECORD, i + 1)) n++;
  return n;
}

/** Where the record of `name` is in `group`: [start, end) with its value from `valueStart`. */
function find(group: string, name: string): { start: number; valueStart: number; end: number } | undefined {
  const start = group.indexOf(`${RECORD}${name}${NAME_END}`);
  if (start < 0) return undefined;
  const valueStart = start + name.length + 2;
  const next = group.indexOf(RECORD, valueStart);
  return { start, valueStart, end: next < 0 ? group.length : next };
}
