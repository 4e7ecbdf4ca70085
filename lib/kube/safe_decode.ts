/**
 * A cache's decoder that cannot stop the cache. An exception while decoding one object (a bug, or an object shaped to
 * make some walk throw, as deep nesting once did) would fail the whole initial list at every retry, so the cache would
 * never sync, and would end the watch that delivered it. Instead the object is skipped, as an object that does not
 * decode is: left out of an initial list, its older copy kept on a watch event, with a warning that names it.
 */
import { getLogger } from "@logtape/logtape";
import type { KubeObject } from "./objects.ts";

const log = getLogger(["espejo", "cache"]);

export function decodingSafely<T, A extends unknown[]>(
  decode: (raw: KubeObject, ...rest: A) => T | undefined,
  collection: string,
): (raw: KubeObject, ...rest: A) => T | undefined {
  return (raw, ...rest) => {
    try {
      return decode(raw, ...rest);
    } catch (e) {
      log.warn("Cannot decode {object} of {collection}, skipped until it changes: {error}", {
        object: `${raw.metadata?.namespace ? `${raw.metadata.namespace}/` : ""}${raw.metadata?.name ?? "(no name)"}`,
        collection,
        error: e instanceof Error ? e.message : String(e),
      });
      return undefined;
    }
  };
}
