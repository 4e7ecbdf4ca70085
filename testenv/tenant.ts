/**
 * A hostile tenant as the threat model has it: a ServiceAccount that may write some kinds in its own namespace(s)
 * only (a Role and a RoleBinding in each, never a ClusterRole), with a token from the TokenRequest API, acting
 * through its own client against the real API server.
 */
import { HttpKubeClient } from "../lib/kube/client.ts";
import type { Identity } from "./controlplane.ts";
import { eventually, type TestCluster } from "./shared.ts";

export interface Tenant {
  namespace: string;
  identity: Identity;
  client: HttpKubeClient;
}

/** What the tenant may write: configmaps and networkpolicies, unless said otherwise. */
const EDITOR_RULES = [
  { apiGroups: [""], resources: ["configmaps"] },
  { apiGroups: ["networking.k8s.io"], resources: ["networkpolicies"] },
];

/** What the tenant may do with them: all but deletecollection, unless said otherwise. */
const EDITOR_VERBS = ["get", "list", "watch", "create", "update", "patch", "delete"];

export interface TenantOptions {
  /** More namespaces (which must exist) where the tenant gets the same Role and RoleBinding. */
  alsoIn?: string[];
  /** The kinds the Role names; the first resource of the first rule is the one listed to wait for RBAC. */
  rules?: { apiGroups: string[]; resources: string[] }[];
  /** The verbs the Role allows on every resource of `rules`; they include list, by which the wait for RBAC asks. */
  verbs?: string[];
}

/**
 * ServiceAccount `tenant` of `namespace` (which must exist), bound in `namespace` and each of `alsoIn` to a Role
 * `tenant-editor` that may do `verbs` with what `rules` name. Its user agent is kubectl's (not the tests'
 * "espejo-test"), so its default field manager is a tenant's.
 */
export async function createTenant(
  c: TestCluster,
  admin: HttpKubeClient,
  namespace: string,
  { alsoIn = [], rules = EDITOR_RULES, verbs = EDITOR_VERBS }: TenantOptions = {},
): Promise<Tenant> {
  const create = (path: string, body: unknown) => admin.request({ method: "POST", path, body });
  await create(`/api/v1/namespaces/${namespace}/serviceaccounts`, {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: "tenant" },
  });
  for (const ns of [namespace, ...alsoIn]) {
    await create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "tenant-editor" },
      rules: rules.map((r) => ({ ...r, verbs })),
    });
    await create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "tenant-editor" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "tenant-editor" },
      subjects: [{ kind: "ServiceAccount", name: "tenant", namespace }],
    });
  }
  const tr = await admin.request<{ status: { token: string } }>({
    method: "POST",
    path: `/api/v1/namespaces/${namespace}/serviceaccounts/tenant/token`,
    body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds: 3600 } },
  });
  const identity = { username: `system:serviceaccount:${namespace}:tenant`, token: tr.status.token };
  const client = new HttpKubeClient({
    server: c.server,
    caCerts: [c.caPem],
    authorization: () => `Bearer ${identity.token}`,
    userAgent: "kubectl/v1.35.4 (tenant)",
  });
  // The API server's RBAC authorizer learns of new bindings through its informers: wait until the tenant may act.
  const probe = rules[0];
  const base = probe.apiGroups[0] ? `/apis/${probe.apiGroups[0]}/v1` : "/api/v1";
  for (const ns of [namespace, ...alsoIn]) {
    await eventually(
      () =>
        client.request({ method: "GET", path: `${base}/namespaces/${ns}/${probe.resources[0]}`, query: { limit: 1 } }),
      10_000,
      `the tenant's RoleBinding in ${ns} to take effect`,
    );
  }
  return { namespace, identity, client };
}
