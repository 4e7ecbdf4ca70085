/**
 * A replace: the object is deleted (by uid: an object created again meanwhile under the name is not touched) and
 * created anew, for a change that no update can make (an immutable field, a binding's roleRef) or, with
 * `forceRecreate`, for any update the server refuses as invalid.
 *
 * A finalizer that holds the deleted object is a field the item does not set: espejo removes those of its own object
 * (keeping the ones the item sets) so that the replace can finish. It does so after the delete, with an update at the
 * version the delete returned: once an object is being deleted, finalizers can only be removed, never added, and a
 * change meanwhile fails the update (409) instead of being overwritten. An update, not a patch: espejo's rights on
 * the kinds it writes are get, list, watch, create, update and delete.
 *
 * No worker waits for a deletion: when the create finds the object still there (another finalizer, a slow garbage
 * collector), the replace fails as transient ({@link StillDeleting}); the namespace is synced again by the retry and
 * by the object's deletion event.
 */
import type { Impersonation, KubeClient } from "../kube/client.ts";
import { isAlreadyExists, isNotFound } from "../kube/errors.ts";
import type { KubeObject } from "../kube/objects.ts";

/** The object being replaced is still there (being deleted): a later try creates it. */
export class StillDeleting extends Error {
  constructor(readonly finalizers: readonly string[]) {
    super(
      "it is being replaced and is still being deleted" +
        (finalizers.length ? ` (finalizers ${finalizers.join(", ")} hold it)` : "") + "; it is created on a later try",
    );
    this.name = "StillDeleting";
  }
}

export interface ReplaceRequest {
  /** The object's path, and its collection's (for the create). */
  path: string;
  collection: string;
  /** The uid of the object to delete; undefined: whatever is there (it was not read). */
  uid?: string;
  /** The object to create. */
  body: KubeObject;
  /** The delete is sent as this user (the SyncConfig's ServiceAccount), as `write` sends the rest. */
  as?: Impersonation;
  /** Sends a create or update with espejo's field manager. */
  write(method: "POST" | "PUT", path: string, body: KubeObject): Promise<KubeObject>;
  /** The old object is deleted (or being deleted): the caches forget it before its watch events arrive. */
  deleted(): void;
}

export interface Replaced {
  reply: KubeObject;
  /** Foreign finalizers espejo removed from the old object. */
  finalizersRemoved: string[];
}

/** The finalizers of `live` that the desired object does not set (pure). */
export function foreignFinalizers(
  live: readonly string[] | undefined,
  desired: readonly string[] | undefined,
): string[] {
  const own = new Set(desired ?? []);
  return (live ?? []).filter((f) => !own.has(f));
}

export async function replaceObject(client: KubeClient, r: ReplaceRequest): Promise<Replaced> {
  let old: KubeObject | undefined;
  try {
    old = await client.request<KubeObject>({
      method: "DELETE",
      path: r.path,
      as: r.as,
      body: {
        apiVersion: "v1",
        kind: "DeleteOptions",
        propagationPolicy: "Background",
        ...(r.uid ? { preconditions: { uid: r.uid } } : {}),
      },
    });
  } catch (e) {
    if (!isNotFound(e)) throw e; // a conflict: another object has the name now; the next try judges it
  }
  r.deleted();
  let finalizersRemoved: string[] = [];
  // A Status reply: deleted at once. An object: it is being deleted, held by its finalizers.
  const held = old?.kind !== "Status" ? old?.metadata?.finalizers ?? [] : [];
  if (old && held.length) {
    const foreign = foreignFinalizers(held, r.body.metadata?.finalizers);
    if (foreign.length) {
      const kept = held.filter((f) => !foreign.includes(f));
      await r.write("PUT", r.path, { ...old, metadata: { ...old.metadata, finalizers: kept } }).catch((e) => {
        if (!isNotFound(e)) throw e; // gone meanwhile: nothing holds it
      });
      finalizersRemoved = foreign;
    }
  }
  try {
    return { reply: await r.write("POST", r.collection, r.body), finalizersRemoved };
  } catch (e) {
    if (isAlreadyExists(e)) throw new StillDeleting(held.filter((f) => !finalizersRemoved.includes(f)));
    throw e;
  }
}
