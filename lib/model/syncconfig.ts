/**
 * Validation and compilation of a SyncConfig: done once per generation (and value of its ServiceAccount annotation,
 * lib/model/identity.ts), so that a sync only evaluates compiled
 * selectors and pre-validated items. Spec problems make the whole SyncConfig invalid (espejo's `Invalid`
 * condition); item problems only fail that item.
 */
import type { SyncConfig as SyncConfigSchema } from "./syncconfig_types.ts";
import { compileNamespaceSelector, type NamespaceSelector, SelectorError } from "./selector.ts";
import { isTrustedNamespace, type WriteIdentity, writeIdentity } from "./identity.ts";
import { isObject, type KubeObject, type ObjectMeta, SERVER_OWNED_METADATA, splitApiVersion } from "../kube/objects.ts";

/** A SyncConfig: the CRD's shape, its metadata the API's (checked at the edge, see decodeObjectMeta). */
export type SyncConfig = Omit<SyncConfigSchema, "metadata"> & { metadata?: ObjectMeta };

/** Identifies the SyncConfig in Events (involvedObject). */
export function refOf(cfg: SyncConfig): { namespace: string; name: string; uid: string } {
  return { namespace: cfg.metadata?.namespace ?? "", name: cfg.metadata?.name ?? "", uid: cfg.metadata?.uid ?? "" };
}

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
  /** The ServiceAccount its writes are made as (lib/model/identity.ts); undefined: espejo's own identity. */
  writeAs?: WriteIdentity;
  /**
   * Its namespace is trusted (lib/model/identity.ts, `isTrustedNamespace`): it outranks every SyncConfig that is not,
   * and espejo's caches may tell it what they hold. An untrusted one (delegated mode, a team's namespace) always names a
   * ServiceAccount, and is told only what that ServiceAccount may read (lib/sync/delegated_view.ts).
   */
  trusted: boolean;
}

/** What compiling depends on besides the SyncConfig: the controller's settings. */
export interface CompileOptions {
  /** Delegated mode: the namespaces whose SyncConfigs may write as espejo (`--trusted-namespaces`); undefined: off. */
  trustedNamespaces?: readonly string[];
}

export type CompileResult = { ok: true; config: CompiledSyncConfig } | { ok: false; key: string; message: string };

export const keyOf = (cfg: SyncConfig): string => `${cfg.metadata?.namespace ?? ""}/${cfg.metadata?.name ?? ""}`;

/**
 * Deepest nesting of objects and arrays accepted in a syncItem (the item itself is level 1; a ConfigMap's data is
 * level 2). Kubernetes objects are rarely deeper than about 20; the limit keeps every recursive walk of a template
 * (copying, rendering, hashing, comparing) far from the stack's end, where a 3,000-level item would throw.
 */
export const MAX_ITEM_DEPTH = 100;

/** Maps of strings in core kinds: a value of another type would be refused by the API server on every write. */
const STRING_MAPS = new Map([["v1/Secret", ["data", "stringData"]], ["v1/ConfigMap", ["data", "binaryData"]]]);

/**
 * Validates the spec and compiles selectors and items. Messages name the SyncConfig and the field. Never throws:
 * an unexpected exception makes the SyncConfig invalid with a message naming the part being compiled.
 */
export function compileSyncConfig(cfg: SyncConfig, options: CompileOptions = {}): CompileResult {
  let key = "";
  let at = ".metadata"; // the part being compiled, for the message of an unexpected exception
  const invalid = (message: string): CompileResult => ({ ok: false, key, message: `SyncConfig ${key}: ${message}` });
  try {
    key = keyOf(cfg);
    const ref = refOf(cfg);
    const identity = writeIdentity(ref.namespace, ref.name, cfg.metadata?.annotations, options.trustedNamespaces);
    if (!identity.ok) return invalid(identity.problem);
    at = ".spec";
    const spec = cfg.spec ?? {};
    let selector: NamespaceSelector;
    try {
      at = ".spec.namespaceSelector";
      selector = compileNamespaceSelector(spec.namespaceSelector);
    } catch (e) {
      if (e instanceof SelectorError) return invalid(e.message);
      throw e;
    }
    if (!(spec.syncItems?.length) && !(spec.deleteItems?.length)) {
      return invalid(".spec.syncItems and .spec.deleteItems are both empty: there is nothing to do");
    }
    at = ".spec.syncItems";
    const syncItems = (spec.syncItems ?? []).map((raw, index) => {
      at = `.spec.syncItems[${index}]`;
      return compileSyncItem(raw, index);
    });
    markShadowed(syncItems);
    at = ".spec.deleteItems";
    const deleteItems = (spec.deleteItems ?? []).map((raw, index) => {
      at = `.spec.deleteItems[${index}]`;
      return compileDeleteItem(raw, index);
    });
    at = ".metadata";
    return {
      ok: true,
      config: {
        key,
        ...ref,
        generation: cfg.metadata?.generation ?? 0,
        selector,
        syncItems,
        deleteItems,
        forceRecreate: spec.forceRecreate === true,
        writeAs: identity.writeAs,
        trusted: isTrustedNamespace(ref.namespace, options.trustedNamespaces),
      },
    };
  } catch (e) {
    return invalid(`${at} cannot be compiled: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
  }
}

/**
 * Two items naming the same object (same API group, kind and name) would overwrite each other on every pass. The
 * Go espejo applied both, so the last one won: that one is kept, the earlier ones fail naming it.
 */
function markShadowed(items: SyncItemSpec[]): void {
  const last = new Map<string, number>();
  const identity = (i: SyncItemSpec) => `${splitApiVersion(i.apiVersion).group}|${i.kind}|${i.name}`;
  for (const item of items) if (!item.problem) last.set(identity(item), item.index);
  for (const item of items) {
    const winner = last.get(identity(item));
    if (item.problem || winner === undefined || winner === item.index) continue;
    item.problem = `.spec.syncItems[${item.index}] (${item.kind} ${item.name}) names the same object as ` +
      `.spec.syncItems[${winner}], which is synced instead (both would be written on every pass)`;
  }
}

/**
 * The apiVersion as the API server writes it: `/v1`, which the server admits in a SyncConfig and discovery resolves
 * to the core group, is `v1`. Every check by spelling after this (Secret normalisation, string maps, server defaults)
 * then sees one spelling for one resource; `espejo plan` masks Secrets by the resolved resource anyway.
 */
export function canonicalApiVersion(apiVersion: string): string {
  return apiVersion.startsWith("/") ? apiVersion.slice(1) : apiVersion;
}

function compileDeleteItem(raw: unknown, index: number): DeleteItemSpec {
  const field = `.spec.deleteItems[${index}]`;
  const item = isObject(raw) ? raw : {};
  const string = (k: string) => typeof item[k] === "string" ? item[k] as string : "";
  const apiVersion = canonicalApiVersion(string("apiVersion"));
  const kind = string("kind");
  const name = string("name");
  const missing = [!apiVersion && "apiVersion", !kind && "kind", !name && "name"].filter(Boolean);
  return {
    index,
    apiVersion,
    kind,
    name,
    problem: missing.length ? `${field} has no ${missing.join(", ")}` : undefined,
  };
}

function compileSyncItem(raw: unknown, index: number): SyncItemSpec {
  const field = `.spec.syncItems[${index}]`;
  const item = isObject(raw) ? (raw as KubeObject) : {};
  const apiVersion = canonicalApiVersion(typeof item.apiVersion === "string" ? item.apiVersion : "");
  const kind = typeof item.kind === "string" ? item.kind : "";
  const name = isObject(item.metadata) && typeof item.metadata.name === "string" ? item.metadata.name : "";
  const missing = [!apiVersion && "apiVersion", !kind && "kind", !name && "metadata.name"].filter(Boolean);
  const result = (template: KubeObject, problem: string | undefined): SyncItemSpec => ({
    index,
    apiVersion,
    kind,
    name,
    template,
    problem,
  });
  // Before anything that recurses (structuredClone fails at about 3,000 levels): a too-deep item is not copied.
  const depth = nestingDepth(item);
  if (depth > MAX_ITEM_DEPTH) {
    return result(
      { apiVersion, kind, metadata: { name } },
      `${field} is nested ${depth} levels deep, more than the ${MAX_ITEM_DEPTH} allowed`,
    );
  }
  const template: KubeObject = structuredClone(item);
  if (apiVersion) template.apiVersion = apiVersion;
  const metadata = { ...(isObject(template.metadata) ? template.metadata : {}) };
  for (const k of SERVER_OWNED_METADATA) delete metadata[k];
  delete template.status;
  template.metadata = metadata;
  const problem = missing.length
    ? `${field} has no ${missing.join(", ")}`
    : stringMapProblem(item, `${apiVersion}/${kind}`, field);
  return result(template, problem);
}

/**
 * Why a map of strings of a core kind (a Secret's data and stringData, a ConfigMap's data and binaryData) is not
 * one, naming the key but never the value, which may be secret.
 */
function stringMapProblem(item: KubeObject, apiVersionKind: string, field: string): string | undefined {
  for (const map of STRING_MAPS.get(apiVersionKind) ?? []) {
    if (!Object.hasOwn(item, map)) continue;
    const value = item[map];
    if (value === null || value === undefined) continue;
    if (!isObject(value)) return `${field}.${map} is not an object of strings`;
    for (const [k, v] of Object.entries(value)) {
      if (typeof v !== "string") return `${field}.${map}[${JSON.stringify(k)}] is not a string`;
    }
  }
  return undefined;
}

/**
 * How deeply objects and arrays nest in `value` (a scalar is 0, `{}` and `[]` are 1), found without recursion so
 * that no depth makes it throw; time and memory are linear in the size of `value`.
 */
function nestingDepth(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== "object" || v === null) continue;
    deepest = Math.max(deepest, depth);
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === "object" && child !== null) stack.push([child, depth + 1]);
    }
  }
  return deepest;
}
