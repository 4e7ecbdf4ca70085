/**
 * Validation and compilation of a SyncConfig: done once per generation, so that a sync only evaluates compiled
 * selectors and pre-validated items. Spec problems make the whole SyncConfig invalid (espejo's `Invalid`
 * condition); item problems only fail that item.
 */
import type { SyncConfig } from "./types/syncconfig.ts";
import { compileNamespaceSelector, type NamespaceSelector, SelectorError } from "./selector.ts";
import { isObject, type KubeObject } from "./objects.ts";

export type { SyncConfig };

/** A syncItem as written in the spec, or why it cannot be synced at all. */
export interface SyncItemSpec {
  index: number;
  apiVersion: string;
  kind: string;
  name: string;
  template: KubeObject;
  /** Set when the item cannot be synced anywhere; the item then counts as failed in every target namespace. */
  problem?: string;
}

export interface DeleteItemSpec {
  index: number;
  apiVersion: string;
  kind: string;
  name: string;
  problem?: string;
}

export interface CompiledSyncConfig {
  /** `namespace/name` */
  key: string;
  namespace: string;
  name: string;
  generation: number;
  uid: string;
  selector: NamespaceSelector;
  syncItems: SyncItemSpec[];
  deleteItems: DeleteItemSpec[];
  forceRecreate: boolean;
}

export type CompileResult = { ok: true; config: CompiledSyncConfig } | { ok: false; key: string; message: string };

export const keyOf = (cfg: SyncConfig): string =>
  `${(cfg.metadata?.namespace as string | undefined) ?? ""}/${cfg.metadata?.name as string}`;

/** Metadata the server owns; copying it from an item would make every write fail or every comparison differ. */
const SERVER_METADATA = [
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "managedFields",
  "selfLink",
];

/** Validates the spec and compiles selectors and items. Messages name the SyncConfig and the field. */
export function compileSyncConfig(cfg: SyncConfig): CompileResult {
  const key = keyOf(cfg);
  const spec = cfg.spec ?? {};
  const invalid = (message: string): CompileResult => ({ ok: false, key, message: `SyncConfig ${key}: ${message}` });
  let selector: NamespaceSelector;
  try {
    selector = compileNamespaceSelector(spec.namespaceSelector);
  } catch (e) {
    if (e instanceof SelectorError) return invalid(e.message);
    throw e;
  }
  if (!(spec.syncItems?.length) && !(spec.deleteItems?.length)) {
    return invalid(".spec.syncItems and .spec.deleteItems are both empty: there is nothing to do");
  }
  const syncItems = (spec.syncItems ?? []).map((raw, index) => compileSyncItem(raw, index));
  const deleteItems = (spec.deleteItems ?? []).map((raw, index): DeleteItemSpec => {
    const field = `.spec.deleteItems[${index}]`;
    const apiVersion = raw.apiVersion ?? "";
    const kind = raw.kind ?? "";
    const name = raw.name ?? "";
    const missing = [!apiVersion && "apiVersion", !kind && "kind", !name && "name"].filter(Boolean);
    return {
      index,
      apiVersion,
      kind,
      name,
      problem: missing.length ? `${field} has no ${missing.join(", ")}` : undefined,
    };
  });
  return {
    ok: true,
    config: {
      key,
      namespace: (cfg.metadata?.namespace as string) ?? "",
      name: cfg.metadata?.name as string,
      generation: (cfg.metadata?.generation as number) ?? 0,
      uid: (cfg.metadata?.uid as string) ?? "",
      selector,
      syncItems,
      deleteItems,
      forceRecreate: spec.forceRecreate === true,
    },
  };
}

function compileSyncItem(raw: unknown, index: number): SyncItemSpec {
  const field = `.spec.syncItems[${index}]`;
  const item = isObject(raw) ? (raw as KubeObject) : {};
  const apiVersion = typeof item.apiVersion === "string" ? item.apiVersion : "";
  const kind = typeof item.kind === "string" ? item.kind : "";
  const name = typeof item.metadata?.name === "string" ? item.metadata.name : "";
  const missing = [!apiVersion && "apiVersion", !kind && "kind", !name && "metadata.name"].filter(Boolean);
  const template: KubeObject = structuredClone(item);
  const metadata = { ...(template.metadata ?? {}) };
  for (const k of SERVER_METADATA) delete metadata[k];
  delete template.status;
  template.metadata = metadata;
  return {
    index,
    apiVersion,
    kind,
    name,
    template,
    problem: missing.length ? `${field} has no ${missing.join(", ")}` : undefined,
  };
}
