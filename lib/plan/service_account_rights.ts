/**
 * What each ServiceAccount a planned SyncConfig writes as (lib/model/identity.ts) needs, namespace by namespace: the
 * controller sends that SyncConfig's writes as it, so the API server grants them by its rights, usually a team's
 * RoleBindings in some namespaces only. A right held cluster-wide would hide nothing, but one missing in 2 of 40
 * namespaces fails there only: so the rights are namespaced, one per namespace the plan writes to.
 *
 * Per item kind, what the controller's own identity needs for a SyncConfig without one (./rights.ts): get, create and
 * update for a syncItem's kind in every namespace the SyncConfig selects (a namespace in sync now needs them at its
 * next drift), delete there too with forceRecreate or pruning; delete for a deleteItem's kind; delete for each
 * planned prune, in its namespace (one no longer selected, or any, for a SyncConfig being deleted). Never list nor
 * watch: reads stay on espejo's caches, and stay espejo's own rights. For a SyncConfig of an untrusted namespace
 * (delegated mode), `get` on each namespace too: the controller acts for it only in namespaces its ServiceAccount may
 * get (lib/sync/delegated_view.ts).
 */
import { keyOf } from "../model/syncconfig.ts";
import type { ConfigPlan } from "./plan.ts";
import { itemResources, type Right } from "./rights.ts";
import type { Snapshot } from "./snapshot.ts";

/** A ServiceAccount's needs for the SyncConfigs planned that write as it. */
export interface ServiceAccountNeed {
  /** `namespace/name`. */
  serviceAccount: string;
  /** `system:serviceaccount:namespace:name`, whose rights are reviewed. */
  username: string;
  /** The planned SyncConfigs that write as it, `namespace/name`, sorted. */
  syncConfigs: string[];
  /** Namespaced rights, each once, sorted by namespace, group, resource and verb. */
  rights: Right[];
}

/** The order verbs are reported in: as a sync uses them. */
const VERB_ORDER = ["get", "create", "update", "delete"];

/** The needs of every ServiceAccount the planned SyncConfigs write as, sorted by ServiceAccount. */
export function serviceAccountRights(snapshot: Snapshot, plans: ConfigPlan[]): ServiceAccountNeed[] {
  const needs = new Map<string, { need: ServiceAccountNeed; rights: Map<string, Right> }>();
  const byKey = new Map(snapshot.syncConfigs.map((c) => [keyOf(c.syncConfig), c.syncConfig]));
  for (const plan of plans) {
    const syncConfig = byKey.get(plan.syncConfig);
    if (!plan.writeAs || plan.invalid || !syncConfig) continue;
    const { serviceAccount, username } = plan.writeAs;
    let entry = needs.get(serviceAccount);
    if (!entry) {
      entry = { need: { serviceAccount, username, syncConfigs: [], rights: [] }, rights: new Map() };
      needs.set(serviceAccount, entry);
    }
    entry.need.syncConfigs.push(plan.syncConfig);
    const rights = entry.rights;
    const add = (namespace: string, group: string, resource: string, ...verbs: string[]) => {
      for (const verb of verbs) {
        rights.set(`${namespace}/${group}/${resource}/${verb}`, { group, resource, verb, namespace });
      }
    };
    const { sync, del } = itemResources(snapshot, syncConfig);
    const deletes = syncConfig.spec?.forceRecreate === true || plan.pruning;
    for (const namespace of plan.namespaces ?? []) {
      // In delegated mode a namespace its ServiceAccount may not get is out of the SyncConfig's view.
      if (plan.untrusted) add(namespace, "", "namespaces", "get");
      for (const r of sync) {
        add(namespace, r.group, r.resource, "get", "create", "update");
        if (deletes) add(namespace, r.group, r.resource, "delete");
      }
      for (const r of del) add(namespace, r.group, r.resource, "delete");
    }
    for (const e of plan.entries) {
      if (e.action === "prune" && e.resource) add(e.namespace, e.resource.group, e.resource.resource, "delete");
    }
  }
  return [...needs.values()].map(({ need, rights }) => ({
    ...need,
    syncConfigs: need.syncConfigs.sort(),
    rights: [...rights.values()].sort(compareRights),
  })).sort((a, b) => a.serviceAccount.localeCompare(b.serviceAccount));
}

/** By namespace, group, resource, then verb in {@link VERB_ORDER}. */
export function compareRights(a: Right, b: Right): number {
  return (a.namespace ?? "").localeCompare(b.namespace ?? "") || a.group.localeCompare(b.group) ||
    a.resource.localeCompare(b.resource) || VERB_ORDER.indexOf(a.verb) - VERB_ORDER.indexOf(b.verb);
}
