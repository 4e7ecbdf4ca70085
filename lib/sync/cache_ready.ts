/** Whether a cache a sync needs is filled, or why not (lib/sync/resource_caches.ts). */
import type { ResourceInfo } from "../kube/discovery.ts";
import { reasonOf } from "./failures.ts";

/** How long a sync waits for a new cache to fill before it reports the item as failed (and retries later). */
const CACHE_WAIT_MS = 30_000;

export function cacheProblem(resource: ResourceInfo, e: unknown): string {
  return e
    ? `cannot list and watch ${resource.resource}: ${reasonOf(e)}`
    : `the cache of ${resource.resource} is not filled yet`;
}

/**
 * Waits for a cache's first list; gives up early once listing has failed (e.g. 403), to report it at once, and when
 * the cache was stopped meanwhile (its kind no longer named: it will never fill, and the unit must not hang on it).
 */
export async function ready(
  cache: { hasSynced: boolean; lastError: unknown; synced: Promise<void>; stopped: boolean },
): Promise<boolean> {
  const deadline = Date.now() + CACHE_WAIT_MS;
  while (!cache.hasSynced) {
    if (cache.lastError || cache.stopped || Date.now() > deadline) return false;
    await Promise.race([cache.synced, new Promise((r) => setTimeout(r, 50))]);
  }
  return true;
}
