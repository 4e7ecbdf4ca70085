/**
 * espejo's RBAC as deploy/ installs it, for the tests, the demo and the bench: the identity bound to the aggregated
 * ClusterRole (installBase applies deploy/rbac/cluster_role.yaml) and to the Role for Events in the controller's
 * namespace, and the opt-ins of deploy/opt-in/ applied as a cluster admin applies them.
 *
 * An opt-in adds to the one aggregated ClusterRole every controller of a test run is bound to. A test that must see
 * espejo without an opt-in while other tests have opted in makes a copy of deploy/'s ClusterRoles under other names
 * ({@link copyOfDeployedRbac}): the same rules, aggregated by another value of the same label.
 */
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import type { HttpKubeClient } from "../lib/kube/client.ts";
import type { KubeObject } from "../lib/kube/objects.ts";
import { isAlreadyExists } from "../lib/kube/errors.ts";
import { applyObject } from "./apply.ts";
import { repoRoot } from "./build.ts";
import { createServiceAccount, type Identity } from "./controlplane.ts";
import { eventually } from "./shared.ts";

/** The directories of deploy/opt-in/. */
export type OptIn = "secrets" | "serviceaccounts" | "events-in-every-namespace";

/** The ClusterRole a controller is bound to, and the value of the aggregation label that fills it. */
export interface ManagerRole {
  name: string;
  label: string;
}

const AGGREGATE = "sync.appuio.ch/aggregate-to-espejo";
/** deploy/'s: what installBase applies and every test's controller is bound to unless it asks for a copy. */
export const DEPLOYED: ManagerRole = { name: "espejo-manager", label: "true" };

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
}
type ClusterRole = KubeObject & { rules?: Rule[]; aggregationRule?: unknown };

async function documents(...path: string[]): Promise<KubeObject[]> {
  const text = await Deno.readTextFile(join(repoRoot, "deploy", ...path));
  return parseAllDocuments(text).map((d) => d.toJSON() as KubeObject).filter((o) => o?.kind);
}

/** A ClusterRole of deploy/ as `manager` names it: itself for deploy/'s, renamed and relabelled for a copy. */
function asPartOf(role: ClusterRole, manager: ManagerRole): ClusterRole {
  if (manager === DEPLOYED) return role;
  const name = role.metadata!.name === DEPLOYED.name ? manager.name : `${role.metadata!.name}-${manager.label}`;
  const labels = role.metadata?.labels?.[AGGREGATE] ? { [AGGREGATE]: manager.label } : undefined;
  const aggregationRule = role.aggregationRule
    ? { clusterRoleSelectors: [{ matchLabels: { [AGGREGATE]: manager.label } }] }
    : undefined;
  return { ...role, metadata: { name, labels }, aggregationRule };
}

/** Applies `roles` and waits until `manager` aggregates every resource they grant. */
async function applyAggregated(admin: HttpKubeClient, roles: ClusterRole[], manager: ManagerRole): Promise<void> {
  const wanted = roles.flatMap((r) => r.rules ?? []).flatMap((r) => r.resources ?? []);
  for (const role of roles) await applyObject(admin, asPartOf(role, manager));
  await eventually(
    async () => {
      const aggregated = await admin.request<ClusterRole>({
        method: "GET",
        path: `/apis/rbac.authorization.k8s.io/v1/clusterroles/${manager.name}`,
      });
      const has = new Set((aggregated.rules ?? []).flatMap((r) => r.resources ?? []));
      return wanted.every((r) => has.has(r));
    },
    60_000,
    `ClusterRole ${manager.name} to aggregate ${wanted.join(", ")}`,
  );
}

/**
 * Applies deploy/opt-in/`what` as `kubectl apply -k deploy/opt-in/<what>` does, and waits until the aggregation
 * controller has added it to `manager`. For a copy ({@link copyOfDeployedRbac}), the opt-in's copy.
 */
export async function optIn(admin: HttpKubeClient, what: OptIn, manager: ManagerRole = DEPLOYED): Promise<void> {
  const roles = (await documents("opt-in", what, "cluster_role.yaml")).filter((o) => o.kind === "ClusterRole");
  await applyAggregated(admin, roles, manager);
}

/** deploy/'s ClusterRoles again, named and aggregated apart (`espejo-manager-<suffix>`), for a test of opt-ins. */
export async function copyOfDeployedRbac(admin: HttpKubeClient, suffix: string): Promise<ManagerRole> {
  const manager = { name: `${DEPLOYED.name}-${suffix}`, label: suffix };
  const roles = (await documents("rbac", "cluster_role.yaml")).filter((o) => o.kind === "ClusterRole");
  await applyAggregated(admin, roles, manager);
  return manager;
}

/**
 * espejo's identity as deploy/ makes it, in `namespace` (the controller's, where its SyncConfigs are): ServiceAccount
 * `name` bound to `manager` and to deploy/'s Role for Events there (and its Role for the leader Lease with
 * `leaderElection`), plus the other Roles of `roles` in that namespace.
 */
export async function espejoIdentity(
  admin: HttpKubeClient,
  namespace: string,
  opts: { name?: string; manager?: ManagerRole; roles?: string[]; leaderElection?: boolean } = {},
): Promise<Identity> {
  const name = opts.name ?? "espejo";
  await admin.request({
    method: "POST",
    path: "/api/v1/namespaces",
    body: { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } },
  }).catch((e) => {
    if (!isAlreadyExists(e)) throw e;
  });
  const files = ["events_role.yaml", ...(opts.leaderElection ? ["leader_election_role.yaml"] : [])];
  const roles = (await Promise.all(files.map((f) => documents("rbac", f)))).flat().filter((o) => o.kind === "Role");
  for (const role of roles) await applyObject(admin, { ...role, metadata: { ...role.metadata, namespace } });
  const manager = opts.manager ?? DEPLOYED;
  return await createServiceAccount(admin, namespace, name, manager.name, [
    ...roles.map((r) => r.metadata!.name!),
    ...(opts.roles ?? []),
  ]);
}
