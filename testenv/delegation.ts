/**
 * deploy/opt-in/delegation applied for a test's espejo, as a cluster admin applies it for deploy/'s: its
 * ClusterRoles, and its bindings with the test's espejo ServiceAccount as subject and the test's suffix in their
 * names (the tests of a run share one API server). `narrowTo`: instead of the cluster-wide ServiceAccount binding,
 * one RoleBinding in each of these namespaces, as docs/delegation.md shows for limiting which namespaces delegate.
 */
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import type { HttpKubeClient } from "../lib/kube/client.ts";
import type { KubeObject } from "../lib/kube/objects.ts";
import { applyObject } from "./apply.ts";
import { repoRoot } from "./build.ts";
import type { Identity } from "./controlplane.ts";
import { createNamespace } from "./harness.ts";
import { uniqueName } from "./shared.ts";
import { isAlreadyExists } from "../lib/kube/errors.ts";

type Binding = KubeObject & { roleRef: { name: string }; subjects: unknown[] };

/** Applies the opt-in for `espejo` (a ServiceAccount's identity); returns what removes it again. */
export async function delegationFor(
  admin: HttpKubeClient,
  espejo: Identity,
  suffix: string,
  narrowTo?: string[],
): Promise<() => Promise<void>> {
  const [, , namespace, name] = espejo.username.split(":");
  const dir = join(repoRoot, "deploy", "opt-in", "delegation");
  const docs: KubeObject[] = [];
  for await (const f of Deno.readDir(dir)) {
    if (!f.name.endsWith(".yaml") || f.name === "kustomization.yaml") continue;
    const text = await Deno.readTextFile(join(dir, f.name));
    docs.push(...parseAllDocuments(text).map((d) => d.toJSON() as KubeObject).filter((o) => o?.kind));
  }
  const subjects = [{ kind: "ServiceAccount", name, namespace }];
  const applied: string[] = [];
  for (const doc of docs) {
    if (doc.kind === "ClusterRole") {
      await applyObject(admin, doc); // the same rules for every test: applied as they are
      continue;
    }
    const binding = doc as Binding;
    const role = binding.roleRef.name;
    if (narrowTo && role.includes("serviceaccounts")) {
      for (const ns of narrowTo) {
        await applyObject(admin, {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "RoleBinding",
          metadata: { name: `${role}-${suffix}`, namespace: ns },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
          subjects,
        } as KubeObject);
        applied.push(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings/${role}-${suffix}`);
      }
      continue;
    }
    const renamed = `${binding.metadata!.name}-${suffix}`;
    await applyObject(admin, { ...binding, metadata: { name: renamed }, subjects } as KubeObject);
    applied.push(`/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${renamed}`);
  }
  return async () => {
    for (const path of applied) await admin.request({ method: "DELETE", path }).catch(() => {});
  };
}

const RBAC_API = "/apis/rbac.authorization.k8s.io/v1";

/** A team: its namespace (where espejo reads SyncConfigs), ServiceAccount `writer`, and target namespaces. */
export interface Team {
  namespace: string;
  writer: string;
  targets: string[];
  label: string;
}

/**
 * Team namespace and `count` target namespaces labelled for selection; ServiceAccount `writer` may get the namespace
 * and write ConfigMaps, NetworkPolicies and RoleBindings (of ClusterRole view) in the first `allowed` targets only.
 */
export async function createTeam(admin: HttpKubeClient, count: number, allowed: number): Promise<Team> {
  const namespace = uniqueName("team");
  const label = uniqueName("sel");
  await createNamespace(admin, namespace);
  await admin.request({
    method: "POST",
    path: `/api/v1/namespaces/${namespace}/serviceaccounts`,
    body: { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "writer" } },
  });
  const targets: string[] = [];
  for (let i = 0; i < count; i++) {
    const ns = `${label}-${i + 1}`;
    await createNamespace(admin, ns, { [label]: "yes" });
    targets.push(ns);
  }
  for (const ns of targets.slice(0, allowed)) {
    await admin.request({
      method: "POST",
      path: `${RBAC_API}/namespaces/${ns}/roles`,
      body: {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "Role",
        metadata: { name: "espejo-writer" },
        rules: [
          {
            apiGroups: [""],
            resources: ["configmaps"],
            verbs: ["get", "create", "update", "delete"],
          },
          {
            apiGroups: ["networking.k8s.io"],
            resources: ["networkpolicies"],
            verbs: ["get", "create", "update", "delete"],
          },
          {
            apiGroups: ["rbac.authorization.k8s.io"],
            resources: ["rolebindings"],
            verbs: ["get", "create", "update", "delete"],
          },
          // The namespace itself: in delegated mode a namespace the ServiceAccount may not get is out of its view.
          { apiGroups: [""], resources: ["namespaces"], verbs: ["get"] },
          // A RoleBinding may name a role whose rights the writer does not hold only with bind on it.
          {
            apiGroups: ["rbac.authorization.k8s.io"],
            resources: ["clusterroles"],
            resourceNames: ["view"],
            verbs: ["bind"],
          },
        ],
      },
    });
    await admin.request({
      method: "POST",
      path: `${RBAC_API}/namespaces/${ns}/rolebindings`,
      body: {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        metadata: { name: "espejo-writer" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "espejo-writer" },
        subjects: [{ kind: "ServiceAccount", name: "writer", namespace }],
      },
    });
  }
  return { namespace, writer: `system:serviceaccount:${namespace}:writer`, targets, label };
}

/** RBAC rules, as a Role or ClusterRole has them. */
export type Rules = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }[];

/**
 * Grants ServiceAccount `namespace/name` (created if missing) `rules` in each of `where` (a Role and a RoleBinding
 * named `grant`), or cluster-wide with `where: "cluster"` (a ClusterRole and a ClusterRoleBinding named `grant`).
 */
export async function grantServiceAccount(
  admin: HttpKubeClient,
  sa: { namespace: string; name: string },
  grant: string,
  where: string[] | "cluster",
  rules: Rules,
): Promise<void> {
  await admin.request({
    method: "POST",
    path: `/api/v1/namespaces/${sa.namespace}/serviceaccounts`,
    body: { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: sa.name } },
  }).catch((e) => {
    if (!isAlreadyExists(e)) throw e;
  });
  const subjects = [{ kind: "ServiceAccount", name: sa.name, namespace: sa.namespace }];
  const rbac = "rbac.authorization.k8s.io";
  if (where === "cluster") {
    await applyObject(admin, { apiVersion: `${rbac}/v1`, kind: "ClusterRole", metadata: { name: grant }, rules });
    await applyObject(admin, {
      apiVersion: `${rbac}/v1`,
      kind: "ClusterRoleBinding",
      metadata: { name: grant },
      roleRef: { apiGroup: rbac, kind: "ClusterRole", name: grant },
      subjects,
    } as KubeObject);
    return;
  }
  for (const ns of where) {
    await applyObject(admin, {
      apiVersion: `${rbac}/v1`,
      kind: "Role",
      metadata: { name: grant, namespace: ns },
      rules,
    });
    await applyObject(admin, {
      apiVersion: `${rbac}/v1`,
      kind: "RoleBinding",
      metadata: { name: grant, namespace: ns },
      roleRef: { apiGroup: rbac, kind: "Role", name: grant },
      subjects,
    } as KubeObject);
  }
}
