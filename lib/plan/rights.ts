/**
 * Which requests the controller's own identity may not make, asked with one SubjectAccessReview per resource and
 * verb (reviews are not stored). Migrating users need this list: the Go espejo shipped no RBAC for synced kinds.
 * For a SyncConfig that writes as a ServiceAccount (lib/model/identity.ts) espejo itself only reads the item kinds
 * (list, watch: its caches) and impersonates; what the ServiceAccount needs is ./service_account_rights.ts's.
 */
import { reviewUserAccess } from "../kube/access_review.ts";
import type { KubeClient } from "../kube/client.ts";
import type { ResourceInfo } from "../kube/discovery.ts";
import { SYNCCONFIG_EXTRA } from "../model/identity.ts";
import { keyOf, type SyncConfig } from "../model/syncconfig.ts";
import { reasonOf } from "../sync/failures.ts";
import type { ConfigPlan } from "./plan.ts";
import type { Snapshot } from "./snapshot.ts";
import { kindKey } from "./snapshot.ts";

export interface Right {
  group: string;
  resource: string;
  verb: string;
  /** Only this namespace (Events, which go beside their SyncConfig); cluster-wide without. */
  namespace?: string;
  /** Only this object (the ServiceAccount espejo impersonates). */
  name?: string;
}

/** The resource the user extra of espejo's impersonated writes is checked on (group authentication.k8s.io). */
export const EXTRA_RESOURCE = `userextras/${SYNCCONFIG_EXTRA}`;

/** The namespaced resources a SyncConfig's items name, resolved as the snapshot did; unknown kinds are left out. */
export function itemResources(
  snapshot: Snapshot,
  syncConfig: SyncConfig,
): { sync: ResourceInfo[]; del: ResourceInfo[] } {
  const resolve = (i: { apiVersion?: unknown; kind?: unknown }) => {
    const r = snapshot.resources.get(kindKey(String(i?.apiVersion), String(i?.kind)));
    return r instanceof Error || !r?.namespaced ? [] : [r as ResourceInfo];
  };
  const items = (list: unknown) => (Array.isArray(list) ? list : []) as { apiVersion?: unknown; kind?: unknown }[];
  return {
    sync: items(syncConfig.spec?.syncItems).flatMap(resolve),
    del: items(syncConfig.spec?.deleteItems).flatMap(resolve),
  };
}

/**
 * What the controller needs for the SyncConfigs planned: its own resources, and for each item kind what syncing,
 * adopting and pruning use.
 */
export function neededRights(snapshot: Snapshot, plans: ConfigPlan[]): Right[] {
  const out = new Map<string, Right>();
  const add = (group: string, resource: string, ...verbs: string[]) => {
    for (const verb of verbs) out.set(`${group}/${resource}/${verb}`, { group, resource, verb });
  };
  const addIn = (namespace: string, group: string, resource: string, ...verbs: string[]) => {
    for (const verb of verbs) {
      out.set(`${group}/${resource}/${verb}/${namespace}`, { group, resource, verb, namespace });
    }
  };
  add("", "namespaces", "list", "watch");
  add("sync.appuio.ch", "syncconfigs", "list", "watch");
  add("sync.appuio.ch", "syncconfigs/status", "patch");
  const pruning = plans.some((p) => p.pruning);
  if (pruning) add("sync.appuio.ch", "syncconfigs", "patch"); // the prune finalizer
  const byKey = new Map(plans.map((p) => [p.syncConfig, p]));
  for (const { syncConfig } of snapshot.syncConfigs) {
    const plan = byKey.get(keyOf(syncConfig));
    if (!plan) continue;
    // Events are recorded on the SyncConfig, so in its namespace (deploy/ grants them only in espejo's own).
    addIn(syncConfig.metadata?.namespace ?? "", "", "events", "create", "patch");
    const { sync, del } = itemResources(snapshot, syncConfig);
    if (plan.writeAs) {
      // Its writes are the ServiceAccount's; espejo reads the kinds and acts as the ServiceAccount, with the extra.
      for (const r of [...sync, ...del]) add(r.group, r.resource, "list", "watch");
      const [namespace, name] = plan.writeAs.serviceAccount.split("/");
      out.set(`impersonate/${namespace}/${name}`, {
        group: "",
        resource: "serviceaccounts",
        verb: "impersonate",
        namespace,
        name,
      });
      add("authentication.k8s.io", EXTRA_RESOURCE, "impersonate");
      // Of an untrusted namespace: espejo reviews what the ServiceAccount may read (lib/sync/rights.ts).
      if (plan.untrusted) add("authorization.k8s.io", "subjectaccessreviews", "create");
      continue;
    }
    for (const r of sync) {
      add(r.group, r.resource, "list", "watch", "get", "create", "update");
      if (syncConfig.spec?.forceRecreate || pruning) add(r.group, r.resource, "delete");
    }
    for (const r of del) add(r.group, r.resource, "list", "watch", "delete");
  }
  return [...out.values()];
}

/** Whether `user` may make the requests of `r`, by a SubjectAccessReview (lib/kube/access_review.ts). */
export async function mayDo(client: KubeClient, user: string, r: Right): Promise<boolean> {
  const { group, resource, verb, namespace, name } = r;
  return (await reviewUserAccess(client, user, { group, resource, verb, namespace, name })).allowed;
}

/** The rights `user` (a ServiceAccount's username) lacks; `error` when the reviews could not be asked. */
export async function missingRights(
  client: KubeClient,
  user: string,
  needed: Right[],
): Promise<{ missing: Right[]; error?: string }> {
  const missing: Right[] = [];
  try {
    for (const r of needed) if (!await mayDo(client, user, r)) missing.push(r);
    return { missing };
  } catch (e) {
    return { missing, error: `could not review the controller's rights: ${reasonOf(e)}` };
  }
}
