/**
 * What `espejo plan -f` takes from a file, read as `kubectl apply -f` reads it: YAML documents separated by `---`
 * (JSON is YAML), a `List` (`kind: List`, as `kubectl get -o yaml` prints several objects; also `SyncConfigList`)
 * whose items count as documents, SyncConfigs among them used, any other kind set aside and named. A SyncConfig
 * without a namespace takes `-n`, else the namespace the controller reads (WATCH_NAMESPACE: where an apply has to
 * put it for the controller to see it), else the one kubectl would give it: the kubeconfig context's, else
 * `default`; and one whose namespace contradicts `-n` is refused as kubectl refuses it. Pure: the text comes in, no
 * I/O.
 */
import { parseAllDocuments } from "yaml";
import { isObject } from "../kube/objects.ts";
import { decodeSyncConfig } from "../sync/syncconfig_api.ts";
import type { SyncConfig } from "../model/syncconfig.ts";

export const SYNC_CONFIG_API_VERSION = "sync.appuio.ch/v1alpha1";

/** Where a namespace-less SyncConfig goes, and what it may not contradict. */
export interface NamespaceRule {
  /** `-n/--namespace`: given, it wins, and a SyncConfig naming another namespace is an error. */
  flag?: string;
  /** WATCH_NAMESPACE (or `--watch-namespace`), if set: the default of `-n`, before the context's. */
  watch?: string;
  /** The kubeconfig's current context's namespace, if it sets one. */
  context?: string;
}

export interface FileContent {
  syncConfigs: SyncConfig[];
  /** Objects of other kinds, as `Kind name (where)`: `espejo plan` says it ignores them. */
  ignored: string[];
}

/** The namespace a SyncConfig is planned in (its own, else -n, WATCH_NAMESPACE, the context's, default), or an error. */
export function namespaceOf(own: string | undefined, rule: NamespaceRule): { namespace: string } | { error: string } {
  if (rule.flag && own && own !== rule.flag) {
    return {
      error: `its namespace ${own} does not match the namespace ${rule.flag} given with -n (as kubectl, plan ` +
        `refuses that: pass -n ${own} or drop -n)`,
    };
  }
  return { namespace: own || rule.flag || rule.watch || rule.context || "default" };
}

/**
 * The SyncConfigs and the ignored objects of the text of `source`. Throws an Error naming `source`, the document
 * (and the List item) and the reason for text that is not YAML, a document that is not an object, an object
 * without `apiVersion` or `kind`, and a SyncConfig without a valid name.
 */
export function readManifests(text: string, source: string, rule: NamespaceRule): FileContent {
  const out: FileContent = { syncConfigs: [], ignored: [] };
  parseAllDocuments(text).forEach((doc, i) => {
    const where = `${source}: document ${i + 1}`;
    if (doc.errors.length) throw new Error(`${where}: ${withoutExcerpt(doc.errors[0].message)}`);
    const value = doc.toJSON();
    if (value === null || value === undefined) return;
    take(value, where, rule, out);
  });
  return out;
}

function take(value: unknown, where: string, rule: NamespaceRule, out: FileContent): void {
  if (!isObject(value)) throw new Error(`${where} is not an object (a Kubernetes manifest)`);
  const { apiVersion, kind } = value;
  if (typeof kind === "string" && kind.endsWith("List") && Array.isArray(value.items)) {
    // kubectl flattens a List; items of a typed list (SyncConfigList) may leave apiVersion and kind out.
    const itemKind = kind === "List" ? undefined : kind.slice(0, -"List".length);
    value.items.forEach((item, j) => {
      const filled = isObject(item) && itemKind ? { apiVersion, kind: itemKind, ...item } : item;
      take(filled, `${where}, item ${j}`, rule, out);
    });
    return;
  }
  if (typeof apiVersion !== "string" || !apiVersion) throw new Error(`${where} has no apiVersion`);
  if (typeof kind !== "string" || !kind) throw new Error(`${where} has no kind`);
  const meta = isObject(value.metadata) ? value.metadata : {};
  const name = typeof meta.name === "string" ? meta.name : "";
  if (apiVersion !== SYNC_CONFIG_API_VERSION || kind !== "SyncConfig") {
    out.ignored.push(`${kind} ${name || "(no name)"} (${where})`);
    return;
  }
  const own = typeof meta.namespace === "string" ? meta.namespace : undefined;
  const ns = namespaceOf(own, rule);
  if ("error" in ns) throw new Error(`${where} (SyncConfig ${name}): ${ns.error}`);
  const sc = decodeSyncConfig({ ...value, metadata: { ...meta, namespace: ns.namespace } });
  if (!sc) throw new Error(`${where} (SyncConfig) has no valid metadata.name`);
  out.syncConfigs.push(sc);
}

/**
 * A YAML error's message without the excerpt of the file that follows its first line: the line may be a Secret's
 * value. Line and column stay.
 */
function withoutExcerpt(message: string): string {
  return message.split("\n", 1)[0].replace(/:$/, "");
}

/** Whether `kubectl apply -f <dir>` reads a file of this name. */
export function isManifestName(name: string): boolean {
  return /\.(ya?ml|json)$/.test(name);
}
