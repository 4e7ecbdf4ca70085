/**
 * How deep a JSON value may nest before espejo stops walking it by recursion. A tenant chooses the nesting of what
 * it writes into a synced object wherever the schema lets it (a custom resource that preserves unknown fields, a
 * field of type `object`), and the API server stores up to {@link API_SERVER_MAX_DEPTH} levels. A function calling
 * itself once a level, or a copy or serialization by the engine that does (`structuredClone`; `JSON.stringify` off
 * its fast path, for an object with many keys or an array-index key), runs out of stack at a few thousand levels and
 * throws. Thrown while a cache reads its list, that would fail the list at every retry and leave the cache unsynced.
 *
 * So every walk over an observed object either follows the desired object, which is never deeper than an item may be
 * (MAX_ITEM_DEPTH, lib/model/syncconfig.ts, far under {@link MAX_WALK_DEPTH}), or checks {@link deeperThan} first
 * and takes a path without recursion past the bound (lib/kube/canonical_json.ts). `JSON.parse` and the stream
 * splitters (json_items.ts, json_lines.ts) do not recurse.
 */

/**
 * The deepest nesting (an object or array is one level, a scalar none) that is walked by recursion: a quarter of
 * what the shallowest recursive walk (canonical_json.ts) survives at the top of the stack with the engine's default
 * stack size, and ten times the deepest item.
 */
export const MAX_WALK_DEPTH = 1000;

/**
 * The deepest object the API server stores (Kubernetes v1.35, measured by tests/integration/deep_nesting_test.ts):
 * a custom resource whose schema preserves unknown fields, the object itself the first level. Its JSON decoder
 * refuses more than 10,000 levels. (A path through objects only, whose `managedFields` record nests a few levels
 * deeper than the object does, is refused at 9,996 to 9,999 levels and taken again at 10,000; one through a list is
 * taken at any depth up to 10,000.) Tests hold espejo to it; nothing in espejo depends on it.
 */
export const API_SERVER_MAX_DEPTH = 10_000;

/**
 * Whether `value` nests more than `limit` levels deep (`{}` and `[]` are one level, a scalar none), without
 * recursion: it stops at the first value deeper than `limit`, so its time is bounded by the part of `value` within
 * the limit. A cyclic value counts as too deep.
 */
export function deeperThan(value: unknown, limit: number): boolean {
  if (typeof value !== "object" || value === null) return limit < 0;
  // Pairs of a value and its depth; one array, and `for in` rather than Object.values: a third of the time, which
  // matters without a JIT (every watch event of an object an item names is looked at).
  const stack: unknown[] = [value, 1];
  while (stack.length > 0) {
    const depth = stack.pop() as number;
    const v = stack.pop() as object;
    if (depth > limit) return true;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const child = v[i];
        if (typeof child === "object" && child !== null) stack.push(child, depth + 1);
      }
      continue;
    }
    for (const key in v) {
      const child = (v as Record<string, unknown>)[key];
      if (typeof child === "object" && child !== null) stack.push(child, depth + 1);
    }
  }
  return false;
}
