/**
 * What espejo keeps of a Namespace (the controller's cache, `espejo plan`'s snapshot): what selection reads, whether
 * it is terminating, and when its labels last changed. A namespace admin may write about 1 MiB of labels: labels
 * larger than {@link MAX_KEPT_LABELS} keep only the keys some SyncConfig reads (label_keys.ts).
 */
import type { LabelKeys } from "./label_keys.ts";
import type { NamespaceFacts } from "./selector.ts";

/**
 * The most label text (keys and values, in characters) a namespace keeps whole. Namespaces carry a handful of labels
 * (kubernetes.io/metadata.name, a team, pod security levels): a few hundred characters.
 */
export const MAX_KEPT_LABELS = 4096;

/** What the controller keeps of a Namespace: what selection reads, and whether it is terminating. */
export interface NamespaceInfo extends NamespaceFacts {
  phase: string;
  /**
   * When (Date.now()) this process last saw the labels change; undefined when they never changed since it first
   * saw the namespace. Pruning waits for labels to settle (see lib/controller/pruning.ts), so that a namespace
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
  if (keys && labelText(info.labels) > MAX_KEPT_LABELS) {
    info.labels = Object.fromEntries(Object.entries(info.labels).filter(([k]) => keys.has(k)));
    info.labelsFor = keys.version;
  }
  const relabelledAt = previous && !sameLabels(previous.labels, info.labels) ? now : previous?.relabelledAt;
  if (relabelledAt !== undefined) info.relabelledAt = relabelledAt;
  return info;
}

function labelText(labels: Record<string, string>): number {
  let n = 0;
  for (const k in labels) n += k.length + labels[k].length;
  return n;
}

function sameLabels(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => b[k] === a[k]);
}
