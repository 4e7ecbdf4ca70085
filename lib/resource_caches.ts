/**
 * Caches of the objects the controller writes or deletes, one per resource, started on first use:
 * - managed objects: only those carrying our label, full content (managedFields reduced to what drift needs);
 * - deletion candidates: metadata only (name, namespace, uid) of every object of a kind named in `deleteItems`,
 *   so that a deleteItem that is already absent costs no request.
 */
import type { KubeClient } from "./kube/client.ts";
import { collectionPath, type ResourceInfo } from "./kube/discovery.ts";
import { Reflector } from "./kube/reflector.ts";
import { foreignFields, type ObservedState } from "./drift.ts";
import type { KubeObject } from "./objects.ts";

export const MANAGED_LABEL = "sync.appuio.ch/managed-by";
export const MANAGED_LABEL_VALUE = "espejo";

export interface ExistingObject {
  uid: string;
}

export interface CacheEvents {
  /** A managed object changed (someone else may have edited it): its namespace should be checked. */
  onManagedChange?: (namespace: string) => void;
  onWatchRestart?: (resource: string, reason: string) => void;
  onError?: (resource: string, error: unknown, retryInMs: number) => void;
}

const resourceKey = (r: ResourceInfo) => `${r.group}/${r.version}/${r.resource}`;

export class ResourceCaches {
  readonly #managed = new Map<string, Reflector<ObservedState>>();
  readonly #existing = new Map<string, Reflector<ExistingObject>>();

  constructor(
    private readonly client: KubeClient,
    private readonly signal: AbortSignal,
    private readonly events: CacheEvents = {},
  ) {}

  /** The cache of our objects of resource `r`, started if needed. Await `.synced` before trusting it. */
  managed(r: ResourceInfo): Reflector<ObservedState> {
    const key = resourceKey(r);
    let refl = this.#managed.get(key);
    if (!refl) {
      refl = new Reflector<ObservedState>(this.client, {
        path: collectionPath(r),
        labelSelector: `${MANAGED_LABEL}=${MANAGED_LABEL_VALUE}`,
        decode: decodeManaged,
        onChange: (_t, obj) => this.events.onManagedChange?.(obj.object.metadata?.namespace ?? ""),
        onWatchRestart: (reason) => this.events.onWatchRestart?.(r.resource, reason),
        onError: (e, ms) => this.events.onError?.(r.resource, e, ms),
      });
      this.#managed.set(key, refl);
      refl.run(this.signal);
    }
    return refl;
  }

  /** The metadata cache of every object of resource `r`, started if needed. */
  existing(r: ResourceInfo): Reflector<ExistingObject> {
    const key = resourceKey(r);
    let refl = this.#existing.get(key);
    if (!refl) {
      refl = new Reflector<ExistingObject>(this.client, {
        path: collectionPath(r),
        metadataOnly: true,
        decode: (raw) => ({ uid: raw.metadata?.uid ?? "" }),
        onWatchRestart: (reason) => this.events.onWatchRestart?.(r.resource, reason),
        onError: (e, ms) => this.events.onError?.(r.resource, e, ms),
      });
      this.#existing.set(key, refl);
      refl.run(this.signal);
    }
    return refl;
  }

  /** Object counts per cache, for metrics. */
  sizes(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [k, r] of this.#managed) out[`managed:${k}`] = r.size;
    for (const [k, r] of this.#existing) out[`existing:${k}`] = r.size;
    return out;
  }
}

/** Keeps what drift detection needs; managedFields is reduced to the foreign managers' field sets. */
export function decodeManaged(raw: KubeObject): ObservedState {
  const foreign = foreignFields(raw.metadata?.managedFields);
  const object = { ...raw, metadata: { ...raw.metadata } };
  delete object.metadata.managedFields;
  return { object, foreign };
}
