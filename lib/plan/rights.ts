/**
 * Which requests the controller's own identity may not make, asked with one SubjectAccessReview per resource and
 * verb (reviews are not stored). Migrating users need this list: the Go espejo shipped no RBAC for synced kinds.
 */
import type { KubeClient } from "../kube/client.ts";
import type { ResourceInfo } from "../kube/discovery.ts";
import { keyOf } from "../model/syncconfig.ts";
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
  const planned = new Set(plans.map((p) => p.syncConfig));
  for (const { syncConfig } of snapshot.syncConfigs.filter((c) => planned.has(keyOf(c.syncConfig)))) {
    // Events are recorded on the SyncConfig, so in its namespace (deploy/ grants them only in espejo's own).
    addIn(syncConfig.metadata?.namespace ?? "", "", "events", "create", "patch");
    const resolve = (i: { apiVersion?: unknown; kind?: unknown }) => {
      const r = snapshot.resources.get(kindKey(String(i?.apiVersion), String(i?.kind)));
      return r instanceof Error || !r?.namespaced ? undefined : r as ResourceInfo;
    };
    for (const item of (syncConfig.spec?.syncItems ?? []) as { apiVersion?: unknown; kind?: unknown }[]) {
      const r = resolve(item);
      if (!r) continue;
      add(r.group, r.resource, "list", "watch", "get", "create", "update");
      if (syncConfig.spec?.forceRecreate || pruning) add(r.group, r.resource, "delete");
    }
    for (const item of syncConfig.spec?.deleteItems ?? []) {
      const r = resolve(item);
      if (r) add(r.group, r.resource, "list", "watch", "delete");
    }
  }
  return [...out.values()];
}

/** The rights `user` (a ServiceAccount's username) lacks; `error` when the reviews could not be asked. */
export async function missingRights(
  client: KubeClient,
  user: string,
  needed: Right[],
): Promise<{ missing: Right[]; error?: string }> {
  const sa = /^system:serviceaccount:([^:]+):/.exec(user);
  const groups = ["system:authenticated", ...(sa ? ["system:serviceaccounts", `system:serviceaccounts:${sa[1]}`] : [])];
  const missing: Right[] = [];
  try {
    for (const r of needed) {
      const [resource, subresource] = r.resource.split("/");
      const review = await client.request<{ status?: { allowed?: boolean } }>({
        method: "POST",
        path: "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        body: {
          apiVersion: "authorization.k8s.io/v1",
          kind: "SubjectAccessReview",
          spec: {
            user,
            groups,
            resourceAttributes: { group: r.group, resource, subresource, verb: r.verb, namespace: r.namespace },
          },
        },
      });
      if (review.status?.allowed !== true) missing.push(r);
    }
    return { missing };
  } catch (e) {
    return { missing, error: `could not review the controller's rights: ${reasonOf(e)}` };
  }
}
