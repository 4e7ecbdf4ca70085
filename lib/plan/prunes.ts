/**
 * The prunes a plan shows for one SyncConfig: the objects it created (owner annotation and creation record both
 * name it) among the listed ones, judged by the controller's prune rules (lib/sync/prune_decisions.ts) namespace by namespace.
 */
import { type ResourceInfo, resourceKey } from "../kube/discovery.ts";
import type { NamespaceInfo } from "../model/namespace_info.ts";
import type { Registry } from "../model/registry.ts";
import { CREATED_ANNOTATION, MANAGED_LABEL, MANAGED_LABEL_VALUE, OWNER_ANNOTATION } from "../model/markers.ts";
import { planPrunes, type PruneCandidate, type PrunePlan, type PruneScope } from "../sync/prune_decisions.ts";
import { kindKey, type Snapshot } from "./snapshot.ts";

/** What SyncConfig `key` would prune in `namespaces`, where `scopeIn` says where it stands for pruning. */
export function prunesOf(
  snapshot: Snapshot,
  registry: Registry<NamespaceInfo>,
  key: string,
  scopeIn: (ns: NamespaceInfo) => PruneScope,
  namespaces: NamespaceInfo[],
): PrunePlan[] {
  // Candidates come from the kinds the syncItems of every SyncConfig read name (context ones too), as the
  // controller's caches of labelled objects hold those; gathered once, by namespace (not per namespace over all).
  const resources = new Map<string, ResourceInfo>();
  for (const { syncConfig } of snapshot.syncConfigs) {
    for (const i of syncConfig.spec?.syncItems ?? []) {
      const r = snapshot.resources.get(kindKey(String(i.apiVersion), String(i.kind)));
      if (r && !(r instanceof Error) && r.namespaced) resources.set(resourceKey(r), r);
    }
  }
  const created = new Map<string, PruneCandidate[]>();
  for (const [rk, r] of resources) {
    for (const o of snapshot.objects.get(rk)?.values() ?? []) {
      const m = o.metadata;
      if (m?.labels?.[MANAGED_LABEL] !== MANAGED_LABEL_VALUE) continue;
      if (m.annotations?.[OWNER_ANNOTATION] !== key || m.annotations?.[CREATED_ANNOTATION] !== key) continue;
      const namespace = m.namespace ?? "";
      const candidates = created.get(namespace) ?? [];
      candidates.push({ resource: r, namespace, name: m.name ?? "", uid: m.uid ?? "" });
      created.set(namespace, candidates);
    }
  }
  return namespaces.flatMap((ns) => {
    const candidates = created.get(ns.name);
    if (!candidates) return [];
    return planPrunes(key, scopeIn(ns), candidates, (c) => registry.itemOwners(c.resource, ns, c.name));
  });
}
