/**
 * What espejo keeps of a Namespace (the controller's cache, `espejo plan`'s snapshot): what selection reads, whether
 * it is terminating, and when its labels last changed.
 */
import type { NamespaceFacts } from "./selector.ts";

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

/** What the controller keeps of a decoded Namespace; `previous` is its cached copy, whose relabel time carries over. */
export function namespaceInfo(
  ns: { metadata: { name: string; labels: Record<string, string> }; status: { phase: string } },
  previous: NamespaceInfo | undefined,
  now = Date.now(),
): NamespaceInfo {
  const info: NamespaceInfo = { name: ns.metadata.name, labels: ns.metadata.labels, phase: ns.status.phase };
  const relabelledAt = previous && !sameLabels(previous.labels, info.labels) ? now : previous?.relabelledAt;
  if (relabelledAt !== undefined) info.relabelledAt = relabelledAt;
  return info;
}

function sameLabels(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => b[k] === a[k]);
}
