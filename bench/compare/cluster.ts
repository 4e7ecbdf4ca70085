/** What both phases do on the cluster: private executables, discovery, objects, cleanup, requests of a window. */
import { join } from "node:path";
import {
  type AuditEvent,
  type ControlPlane,
  createServiceAccount,
  delay,
  kubeconfigYaml,
} from "../../testenv/controlplane.ts";
import type { HttpKubeClient } from "../../lib/kube/client.ts";
import { isNotFound } from "../../lib/kube/errors.ts";
import { AuditTail } from "../kit/audit.ts";
import { pool } from "../kit/pool.ts";
import { type Obj, requestsOf } from "../compare_lib.ts";
import { log } from "./options.ts";

// ---------------------------------------------------------------------------------------------------------------
// Processes and cgroups

/**
 * A private copy of an executable, its page cache dropped: under a memory cgroup, a page is charged to the group
 * that first faults it in, so code pages already cached by other processes (this script runs on the same `deno`)
 * would not count. With a fresh copy, both controllers pay for their code as in a container.
 */
export async function privateCopy(exe: string, dir: string, name: string): Promise<string> {
  const path = join(dir, name);
  await Deno.copyFile(exe, path);
  await Deno.chmod(path, 0o755);
  const f = await Deno.open(path, { read: true, write: true });
  await f.sync();
  f.close();
  await new Deno.Command("dd", { args: [`if=${path}`, "iflag=nocache", "count=0", "status=none"] }).output();
  return path;
}

// ---------------------------------------------------------------------------------------------------------------
// Cluster helpers

export interface Resource {
  path: string;
  apiVersion: string;
  group: string;
  kind: string;
  resource: string;
  namespaced: boolean;
}

/** Every listable resource of the preferred version of each group. */
export async function discover(admin: HttpKubeClient): Promise<Resource[]> {
  type ApiResources = { resources: { name: string; kind: string; namespaced: boolean; verbs: string[] }[] };
  const out: Resource[] = [];
  const add = (group: string, version: string, list: ApiResources) => {
    const apiVersion = group ? `${group}/${version}` : version;
    const base = group ? `/apis/${apiVersion}` : `/api/${version}`;
    for (const r of list.resources) {
      if (r.name.includes("/") || !r.verbs.includes("list")) continue;
      out.push({
        path: `${base}/${r.name}`,
        apiVersion,
        group,
        kind: r.kind,
        resource: r.name,
        namespaced: r.namespaced,
      });
    }
  };
  add("", "v1", await admin.request<ApiResources>({ method: "GET", path: "/api/v1" }));
  const groups = await admin.request<{ groups: { name: string; preferredVersion: { version: string } }[] }>({
    method: "GET",
    path: "/apis",
  });
  for (const g of groups.groups) {
    if (g.name === "events.k8s.io") continue; // the same Events as core v1
    const v = g.preferredVersion.version;
    add(g.name, v, await admin.request<ApiResources>({ method: "GET", path: `/apis/${g.name}/${v}` }));
  }
  return out;
}

export async function list(admin: HttpKubeClient, path: string, query?: Record<string, string>): Promise<Obj[]> {
  const res = await admin.request<{ items?: Obj[] }>({ method: "GET", path, query });
  return res.items ?? [];
}

export const md = (o: Obj) => (o.metadata ?? {}) as { name: string; namespace?: string; resourceVersion?: string };

export async function createObject(admin: HttpKubeClient, path: string, body: Obj): Promise<void> {
  await admin.request({ method: "POST", path, body });
}

export function collectionFor(obj: Obj): string {
  const ns = md(obj).namespace!;
  const kinds: Record<string, string> = {
    ConfigMap: `/api/v1/namespaces/${ns}/configmaps`,
    Secret: `/api/v1/namespaces/${ns}/secrets`,
    SyncConfig: `/apis/sync.appuio.ch/v1alpha1/namespaces/${ns}/syncconfigs`,
  };
  return kinds[obj.kind as string];
}

/** A ServiceAccount in `namespace` bound to cluster-admin (as both controllers run here), its kubeconfig at `path`. */
export async function clusterAdminIn(cp: ControlPlane, admin: HttpKubeClient, namespace: string, path: string) {
  const identity = await createServiceAccount(admin, namespace, "espejo", "cluster-admin");
  await Deno.writeTextFile(path, kubeconfigYaml(cp.server, cp.caPem, identity));
  return { identity, kubeconfig: path };
}

/** Deletes the run's namespaces (and the cluster-scoped objects named after them) and waits until they are gone. */
export async function deleteRun(admin: HttpKubeClient, prefix: string): Promise<void> {
  const mine = (o: Obj) => md(o).name.startsWith(`${prefix}-`);
  const namespaces = (await list(admin, "/api/v1/namespaces")).filter(mine);
  await pool(
    namespaces,
    8,
    (n) =>
      admin.request({ method: "DELETE", path: `/api/v1/namespaces/${md(n).name}` }).catch((e) => {
        if (!isNotFound(e)) throw e;
      }),
  );
  for (const cr of (await list(admin, "/apis/rbac.authorization.k8s.io/v1/clusterroles")).filter(mine)) {
    await admin.request({ method: "DELETE", path: `/apis/rbac.authorization.k8s.io/v1/clusterroles/${md(cr).name}` })
      .catch(() => {});
  }
  const deadline = Date.now() + 600_000;
  while (Date.now() < deadline) {
    const left = (await list(admin, "/api/v1/namespaces")).filter(mine).length;
    if (left === 0) return;
    await delay(1000);
  }
  log(`namespaces of ${prefix} still terminating after 10 min; going on`);
}

/** Requests of the window since the last read, of one identity. */
export async function windowRequests(audit: AuditTail, username: string): Promise<AuditEvent[]> {
  return requestsOf(await audit.read(), username);
}
