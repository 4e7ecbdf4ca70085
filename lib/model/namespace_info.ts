/**
 * What espejo keeps of a Namespace (the controller's cache, `espejo plan`'s snapshot): what selection reads, whether
 * it is terminating, and when its labels last changed. A namespace admin may write about 1 MiB of labels: labels
 * over {@link MAX_KEPT_LABELS} characters or {@link MAX_KEPT_LABEL_COUNT} labels keep only the keys some SyncConfig
 * reads (label_keys.ts).
 */
import type { LabelKeys } from "./label_keys.ts";
import type { NamespaceFacts } from "./selector.ts";

/**
 * The most label text (keys and values, in characters) a namespace keeps whole. Namespaces carry a handful of labels
 * (kubernetes.io/metadata.name, a team, pod security levels): a few hundred characters.
 */
export const MAX_KEPT_LABELS = 4096;

/** The most labels a namespace keeps whole: each costs about 60 bytes of heap whatever its length. */
export const MAX_KEPT_LABEL_COUNT = 64;

/** What the controller keeps of a Namespace: what selection reads, and whether it is terminating. */
export interface NamespaceInfo extends NamespaceFacts {
  phase: string;
  /**
   * When (Date.now()) this process last saw the labels change; undefined when they never changed since it first
   * saw the namespace. Pruning waits for labels to settle (see lib/controller/prune_step.ts), so that a namespace
   * admin toggling a label costs no create and delete per toggle.
   */
  relabelledAt?: number;
}

/**
 * What the controller keeps of a decoded Namespace; `previous` is its cached copy, whose relabel time carries over.
 * With `keys`, labels over {@link MAX_KEPT_LABELS} keep only the keys it holds, and the namespace is marked with the
 * version of `keys` it was trimmed at ({@link NamespaceFacts.labelsFor}).
 */
export function namespaceInfo(
  ns: { metadata: { name: string; labels: Record<string, string> }; status: { phase: string } },
  previous: NamespaceInfo | undefined,
  now = Date.now(),
  keys?: LabelKeys,
): NamespaceInfo {
  const info: NamespaceInfo = { name: ns.metadata.name, labels: ns.metadata.labels, phase: ns.status.phase };
  if (keys && tooMany(info.labels)) {
    info.labels = Object.fromEntries(Object.entries(info.labels).filter(([k]) => keys.has(k)));
    info.labelsFor = keys.version;
  }
  const relabelledAt = previous && !sameLabels(previous.labels, info.labels) ? now : previous?.relabelledAt;
  if (relabelledAt !== undefined) info.relabelledAt = relabelledAt;
  return info;
}

/** Whether the labels are over {@link MAX_KEPT_LABELS} characters or {@link MAX_KEPT_LABEL_COUNT} labels. */
function tooMany(labels: Record<string, string>): boolean {
  let text = 0, count = 0;
  for (const k in labels) {
    text += k.length + labels[k].length;
    if (++count > MAX_KEPT_LABEL_COUNT || text > MAX_KEPT_LABELS) return true;
  }
  return false;
}

function sameLabels(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => b[k] === a[k]);
}
