/**
 * Performs write plans: the only code that writes target objects. A create that finds the object there adopts it
 * as the planner decides (`planAdoption`: unless another SyncConfig's item holds it); an update keeps the live
 * ownerReferences (read first when the cache did not keep them: the caller holds the turn at large objects,
 * lib/sync/large_gate.ts), re-reads once on a
 * conflict (not in a fight: there a conflict is the other writer's move, and the retry policy decides when to try
 * again), and replaces the object (lib/sync/replace.ts) when the server refuses the update as the plan's
 * {@link ReplaceWhen} says. Every reply is handed to the {@link WriteSink} at once, so the caches know espejo's own
 * versions before the watch brings them.
 *
 * For a SyncConfig that names a ServiceAccount (lib/model/identity.ts), every request made here, the reads on a
 * write's way included, is sent as that ServiceAccount: it gets no answer the ServiceAccount would not get.
 */
import { getLogger } from "@logtape/logtape";
import type { Impersonation, KubeClient } from "../kube/client.ts";
import { objectPath, type ResourceInfo } from "../kube/discovery.ts";
import { isAlreadyExists, isConflict, isImmutableField, isInvalid, isNotFound } from "../kube/errors.ts";
import type { KubeObject } from "../kube/objects.ts";
import type { ItemAction } from "./failures.ts";
import { OwnedByOther } from "./failures.ts";
import { type Claims, heldByOther, type LiveParts, planAdoption, type ReplaceWhen, type WriteSite } from "./planner.ts";
import { replaceObject } from "./replace.ts";
import { CREATED_ANNOTATION, FIELD_MANAGER, OWNER_ANNOTATION } from "../model/markers.ts";

const log = getLogger(["espejo", "applier"]);

/** Where the replies of espejo's writes go (the caches), as they arrive. */
export interface WriteSink {
  written(reply: KubeObject): void;
  /** espejo deleted the object (a replace): forget it until the watch confirms. */
  deleted(objectKey: string): void;
}

/** One object being written for one SyncConfig. */
export interface WriteTarget {
  cfgKey: string;
  /** The SyncConfig is of a trusted namespace (told the name of a SyncConfig that holds the object, whatever it is). */
  trusted: boolean;
  /** Sent as this user (the SyncConfig's ServiceAccount); undefined: as espejo. */
  as?: Impersonation;
  /** When a refused update becomes a replace (the planner's decision). */
  replace: ReplaceWhen;
  /** A restore while a fight is on: a conflict is not re-read at once. */
  contested: boolean;
  resource: ResourceInfo;
  namespace: string;
  desired: KubeObject;
  sink: WriteSink;
}

export interface Applied {
  action: ItemAction;
  reason?: string;
  /** The object was replaced: why, and the foreign finalizers removed from the old one. */
  replaced?: { why: "immutable" | "forceRecreate"; finalizersRemoved: string[] };
}

export class Applier {
  constructor(
    private readonly client: KubeClient,
    /** Whether SyncConfig `owner` has an item for the object (its owner annotation then holds it). */
    readonly claims: Claims,
    private readonly onWrite: (action: ItemAction) => void = () => {},
  ) {}

  /** Creates the object; one that exists without espejo's label (made by hand, by the Go espejo) is adopted. */
  async create(t: WriteTarget): Promise<Applied> {
    try {
      t.sink.written(await this.#write(t, "POST", collectionOf(t), created(t)));
      this.onWrite("create");
      return { action: "create" };
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
    const current = await this.#read(t);
    const adoption = planAdoption(siteOf(t), liveParts(current), this);
    if (adoption.kind === "held") throw new OwnedByOther(adoption.owner, claimantOf(t));
    // Someone may be writing it right now: a re-read on a conflict is still fine here (one create found it).
    return await this.update({ ...t, contested: false }, adoption.live, "it existed without espejo's label");
  }

  /**
   * Replaces the object with the desired one at `live`'s version. A reply at the version sent means the server
   * found nothing to change (extra fields were its own defaults): no write happened. When `live` says the cache did
   * not keep the ownerReferences (a tenant added thousands), they are read first; the read, the body and the reply
   * hold them several times over, so the caller must hold the turn at large objects (lib/sync/large_gate.ts).
   */
  async update(t: WriteTarget, live: LiveParts, reason?: string): Promise<Applied> {
    if (!live.referencesUnkept) return await this.#update(t, live, reason);
    // At another version than `live` the write meets a conflict, as it would have.
    const current = await this.#read(t);
    return await this.#update(t, { ...live, ownerReferences: liveParts(current).ownerReferences }, reason);
  }

  async #update(t: WriteTarget, live: LiveParts, reason?: string): Promise<Applied> {
    this.#logTakeOver(t, live);
    try {
      const updated = await this.#write(t, "PUT", pathOf(t), bodyAt(t.desired, live));
      t.sink.written(updated);
      if (updated.metadata?.resourceVersion === live.resourceVersion) return { action: "none" };
      this.onWrite("update");
      return { action: "update", reason };
    } catch (e) {
      if (isConflict(e) && !t.contested) {
        // The cached copy was stale: read the current version once and try again, unless another SyncConfig with
        // an item for the object has taken it meanwhile.
        const current = await this.#read(t);
        const holder = heldByOther(current.metadata?.annotations?.[OWNER_ANNOTATION], siteOf(t), this);
        if (holder) throw new OwnedByOther(holder, claimantOf(t));
        t.sink.written(await this.#write(t, "PUT", pathOf(t), bodyAt(t.desired, liveParts(current))));
        this.onWrite("update");
        return { action: "update", reason };
      }
      if (t.replace === "invalid" && isInvalid(e)) return await this.#replace(t, e, live, "forceRecreate");
      if (t.replace === "immutable" && isImmutableField(e)) return await this.#replace(t, e, live, "immutable");
      throw e;
    }
  }

  /**
   * Deletes the object if it is still the one with `uid` (as `as`, when given); "absent" when it is gone or another
   * one has the name.
   */
  async delete(
    resource: ResourceInfo,
    namespace: string,
    name: string,
    uid: string,
    as?: Impersonation,
  ): Promise<"deleted" | "absent"> {
    try {
      await this.client.request({
        method: "DELETE",
        as,
        path: objectPath(resource, namespace, name),
        body: { apiVersion: "v1", kind: "DeleteOptions", propagationPolicy: "Background", preconditions: { uid } },
      });
      this.onWrite("delete");
      return "deleted";
    } catch (e) {
      if (isNotFound(e) || isConflict(e)) return "absent"; // conflict: the uid precondition, a new object
      throw e;
    }
  }

  /** The object is deleted and created again; it keeps its creation record, or its lack of one (adopted). */
  async #replace(
    t: WriteTarget,
    rejected: unknown,
    live: LiveParts,
    why: "immutable" | "forceRecreate",
  ): Promise<Applied> {
    const replaced = await replaceObject(this.client, {
      path: pathOf(t),
      collection: collectionOf(t),
      uid: live.uid,
      body: withCreation(t.desired, live.createdBy),
      as: t.as,
      write: (method, path, body) => this.#write(t, method, path, body),
      deleted: () => t.sink.deleted(`${t.namespace}/${t.desired.metadata!.name}`),
    });
    t.sink.written(replaced.reply);
    this.onWrite("recreate");
    const removed = replaced.finalizersRemoved;
    return {
      action: "recreate",
      reason: `update rejected (${rejected instanceof Error ? rejected.message : rejected})` +
        (removed.length ? `; removed finalizers ${removed.join(", ")}, which the item does not set` : ""),
      replaced: { why, finalizersRemoved: removed },
    };
  }

  #logTakeOver(t: WriteTarget, live: LiveParts): void {
    const owner = live.owner;
    if (!owner || owner === t.cfgKey) return;
    log.warn(
      "Overwriting owner annotation {owner} of {kind} {namespace}/{name} with SyncConfig {syncConfig}: no " +
        "SyncConfig that espejo can see has an item for that object, or it writes as a ServiceAccount and yields to " +
        "one that writes as espejo",
      { owner, kind: t.resource.kind, namespace: t.namespace, name: t.desired.metadata!.name, syncConfig: t.cfgKey },
    );
  }

  #write(t: WriteTarget, method: "POST" | "PUT", path: string, body: KubeObject): Promise<KubeObject> {
    return this.client.request<KubeObject>({ method, path, body, query: { fieldManager: FIELD_MANAGER }, as: t.as });
  }

  #read(t: WriteTarget): Promise<KubeObject> {
    return this.client.request<KubeObject>({ method: "GET", path: pathOf(t), as: t.as });
  }
}

const siteOf = (t: WriteTarget): WriteSite => ({ ...t, name: t.desired.metadata!.name! });
const pathOf = (t: WriteTarget) => objectPath(t.resource, t.namespace, t.desired.metadata!.name!);
const collectionOf = (t: WriteTarget) => objectPath(t.resource, t.namespace, "").replace(/\/$/, "");

/** The desired object as espejo creates it: with its creation record, which only a create writes. */
export function created(t: Pick<WriteTarget, "desired" | "cfgKey">): KubeObject {
  return withCreation(t.desired, t.cfgKey);
}

/** `desired` with the creation record `createdBy`, or as it is when there is none. */
function withCreation(desired: KubeObject, createdBy: string | undefined): KubeObject {
  if (createdBy === undefined) return desired;
  const metadata = desired.metadata ?? {};
  return {
    ...desired,
    metadata: { ...metadata, annotations: { ...metadata.annotations, [CREATED_ANNOTATION]: createdBy } },
  };
}

/** The desired object as a replace of the live one sends it (see {@link LiveParts}). */
export function bodyAt(desired: KubeObject, at: LiveParts): KubeObject {
  const metadata = { ...desired.metadata, resourceVersion: at.resourceVersion, ownerReferences: at.ownerReferences };
  // A replace keeps the creation record of an object espejo created (an adopted one has none and gets none).
  if (at.createdBy !== undefined) {
    metadata.annotations = { ...metadata.annotations, [CREATED_ANNOTATION]: at.createdBy };
  }
  return { ...desired, metadata };
}

/** The live parts of an object just read, and its owner annotation (for the log of a take-over). */
export function liveParts(o: KubeObject): LiveParts {
  const refs = o.metadata?.ownerReferences;
  return {
    resourceVersion: o.metadata?.resourceVersion,
    uid: o.metadata?.uid,
    ownerReferences: Array.isArray(refs) && refs.length ? refs : undefined,
    owner: o.metadata?.annotations?.[OWNER_ANNOTATION],
    createdBy: o.metadata?.annotations?.[CREATED_ANNOTATION],
  };
}

const claimantOf = (t: WriteTarget) => ({ key: t.cfgKey, trusted: t.trusted });
