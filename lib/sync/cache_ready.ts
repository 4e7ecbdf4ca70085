/** Whether a cache a sync needs is filled, or why not (lib/sync/resource_caches.ts). */
import type { ResourceInfo } from "../kube/discovery.ts";
import { reasonOf } from "./failures.ts";

/**
 * How long a sync waits for a new cache while nothing arrives in it, before it reports the item as failed (and
 * retries later). Not a limit on the whole fill: after a restart at 5,000 namespaces a kind's 30,000 objects take
 * minutes to arrive inside a 30 % CPU limit, and units that failed meanwhile logged errors where there was none.
 */
export const CACHE_STALL_MS = 30_000;

export function cacheProblem(resource: ResourceInfo, e: unknown): string {
  return e
    ? `cannot list and watch ${resource.resource}: ${reasonOf(e)}`
    : `the cache of ${resource.resource} is not filled yet: nothing arrived in it for ${CACHE_STALL_MS / 1000}s`;
}

/** What {@link ready} reads of a cache (a Reflector). */
export interface FillingCache {
  hasSynced: boolean;
  lastError: unknown;
  stopped: boolean;
  /** Resolves once the first fill settles (synced, failed, stopped) or nothing arrived for `stallMs`. */
  settledOrStalled(stallMs: number): Promise<void>;
}

/**
 * Waits for a cache's first list for as long as it keeps filling; gives up after `stallMs` without an object
 * arriving, at once when listing has failed (e.g. 403), to report it, and when the cache was stopped meanwhile (its
 * kind no longer named: it will never fill, and the unit must not hang on it). The cache wakes the wait
 * (lib/kube/fill_progress.ts): no poll, no timer here.
 */
export async function ready(cache: FillingCache, stallMs = CACHE_STALL_MS): Promise<boolean> {
  if (!cache.hasSynced && !cache.lastError && !cache.stopped) await cache.settledOrStalled(stallMs);
  return cache.hasSynced;
}
