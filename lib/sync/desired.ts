/**
 * The object an item asks for in one namespace: the template rendered for the namespace, with espejo's marker
 * label and annotations, and never the item's ownerReferences (the live object's are kept by the applier: a wrong
 * one would let the garbage collector delete the object). Pure.
 */
import { encodeBase64, hashOfCanonical, hashOfNow, type KubeObject } from "../kube/objects.ts";
import { desiredText } from "./desired_text.ts";
import type { CompiledSyncConfig, SyncItemSpec } from "../model/syncconfig.ts";
import { renderTemplate } from "../model/template.ts";
import {
  CREATED_ANNOTATION,
  HASH_ANNOTATION,
  MANAGED_LABEL,
  MANAGED_LABEL_VALUE,
  OWNER_ANNOTATION,
} from "../model/markers.ts";

/** The desired object and its hash (also written as {@link HASH_ANNOTATION}). */
export function desiredObject(
  cfg: CompiledSyncConfig,
  item: SyncItemSpec,
  namespace: string,
): Promise<{ object: KubeObject; hash: string }> {
  return Promise.resolve(desiredObjectNow(cfg, item, namespace));
}

/** {@link desiredObject}, synchronously (for a cache's decoder, which judges objects as they arrive). */
export function desiredObjectNow(
  cfg: CompiledSyncConfig,
  item: SyncItemSpec,
  namespace: string,
): { object: KubeObject; hash: string } {
  const text = desiredText(cfg, item, namespace, (ns) => rendered(cfg, item, ns));
  if (text === undefined) {
    const object = rendered(cfg, item, namespace);
    return withHash(object, hashOfNow(object));
  }
  return withHash(JSON.parse(text) as KubeObject, hashOfCanonical(text));
}

function withHash(object: KubeObject, hash: string): { object: KubeObject; hash: string } {
  object.metadata!.annotations![HASH_ANNOTATION] = hash;
  return { object, hash };
}

/**
 * The desired object in `namespace`, rendered from the item, without its hash annotation: the slow way, which the
 * item's text (desired_text.ts) stands in for where it can (tests hold the two to the same object and hash).
 */
export function rendered(cfg: CompiledSyncConfig, item: SyncItemSpec, namespace: string): KubeObject {
  const object = renderTemplate(item.template, namespace);
  const metadata = object.metadata ?? {};
  metadata.namespace = namespace;
  metadata.labels = { ...(metadata.labels ?? {}), [MANAGED_LABEL]: MANAGED_LABEL_VALUE };
  metadata.annotations = { ...(metadata.annotations ?? {}), [OWNER_ANNOTATION]: cfg.key };
  // Only a create writes the creation record (lib/sync/prune_decisions.ts); one copied into an item would mark adopted objects.
  delete metadata.annotations[CREATED_ANNOTATION];
  delete metadata.ownerReferences;
  object.metadata = metadata;
  normalizeWriteOnlyFields(object);
  return object;
}

/**
 * The API server turns a Secret's write-only `stringData` into base64 `data` and never returns it; doing the same
 * here keeps the desired object comparable with what is stored (otherwise every sync would see drift).
 */
export function normalizeWriteOnlyFields(object: KubeObject): void {
  if (object.apiVersion !== "v1" || object.kind !== "Secret" || !object.stringData) return;
  const data = { ...(object.data as Record<string, string> | undefined) };
  for (const [k, v] of Object.entries(object.stringData as Record<string, unknown>)) {
    data[k] = encodeBase64(String(v));
  }
  object.data = data;
  delete object.stringData;
}
