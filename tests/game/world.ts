/**
 * The world one game is played in: a tenant namespace selected by a label, a tenant who may edit what espejo syncs
 * there (but only there), a namespace admin who may relabel that one namespace, and two SyncConfigs that sync a
 * ConfigMap, a RoleBinding (SyncConfig "game-prune", pruning on), a Secret, a NetworkPolicy, a ResourceQuota and a
 * Widget (SyncConfig "game-keep", pruning off) into it. The Widget is a custom resource of the game's own
 * ({@link WIDGET_GROUP}, its CRD shared by every game and left in place) whose schema preserves unknown fields: the
 * one kind a tenant may nest as deep as the API server stores (lib/kube/json_depth.ts). Every identity is a ServiceAccount with a token from the TokenRequest API; the
 * controller is the harness's, under the ClusterRole from deploy/.
 *
 * Rights, and why they suffice: the tenant's Role covers configmaps, secrets, rolebindings, networkpolicies,
 * resourcequotas (with their status subresource) and widgets in its namespace; espejo may sync widgets by a
 * ClusterRole labelled sync.appuio.ch/aggregate-to-espejo, as an admin opts in a kind of their own. RBAC lets it create or update a RoleBinding only to a role whose permissions it holds there (or
 * with `bind`); both ClusterRoles a game binds ({@link VIEWER_ROLE}, {@link OTHER_ROLE}) grant reads of configmaps
 * and secrets, which the tenant holds in its namespace, so no `bind` is needed. espejo holds those reads too (it
 * has no `bind` or `escalate`, deploy/rbac/cluster_role.yaml), so it may write the binding as well.
 */
import { HttpKubeClient } from "../../lib/kube/client.ts";
import { isAlreadyExists, isNotFound } from "../../lib/kube/errors.ts";
import type { KubeObject } from "../../lib/kube/objects.ts";
import type { Identity } from "../../testenv/controlplane.ts";
import { applyYaml } from "../../testenv/apply.ts";
import { widgetKindYaml } from "../../testenv/widgets.ts";
import { clientFor, eventually, type TestCluster, uniqueName } from "../../testenv/shared.ts";
import { createNamespace, type RunningController, startController, statusOf } from "../../testenv/harness.ts";

export const MANAGED_LABEL = "sync.appuio.ch/managed-by";
export const OWNER_ANNOTATION = "sync.appuio.ch/owner";
export const HASH_ANNOTATION = "sync.appuio.ch/desired-hash";
export const CREATED_ANNOTATION = "sync.appuio.ch/created-by";
/** The label that selects a game's namespace; its value is the game's id. */
export const SELECT_LABEL = "espejo-game.example/selected";
/** The ClusterRole the synced RoleBinding grants, and the one a tenant's recreate points it at instead. */
export const VIEWER_ROLE = "espejo-game-viewer";
export const OTHER_ROLE = "espejo-game-other";

export type ItemId = "configmap" | "secret" | "rolebinding" | "networkpolicy" | "resourcequota" | "widget";
export const ITEM_IDS: readonly ItemId[] = [
  "configmap",
  "secret",
  "rolebinding",
  "networkpolicy",
  "resourcequota",
  "widget",
];
/** The API group of the game's custom resource, Widget (namespaced; every field preserved). */
export const WIDGET_GROUP = "game.espejo.example";

export interface GameConfig {
  name: string;
  /** `namespace/name`, as espejo writes it into the owner annotation. */
  key: string;
  prune: boolean;
}

/** One synced object: where it lives, which SyncConfig item asks for it, and the item as written there. */
export interface GameItem {
  id: ItemId;
  kind: string;
  name: string;
  /** The collection's path in the game's namespace (POST here, the object at `${collection}/${name}`). */
  collection: string;
  path: string;
  config: GameConfig;
  index: number;
  /** The syncItem: what the object must be (plus espejo's markers). */
  template: KubeObject;
}

export interface Actor {
  identity: Identity;
  client: HttpKubeClient;
}

export interface World {
  cluster: TestCluster;
  admin: HttpKubeClient;
  /** The controller's WATCH_NAMESPACE, where the SyncConfigs live. */
  cfgNs: string;
  /** The tenant's namespace, the only one the game's SyncConfigs select. */
  ns: string;
  gameId: string;
  tenant: Actor;
  nsAdmin: Actor;
  configs: GameConfig[];
  items: GameItem[];
  controller: RunningController;
  intervalMs: number;
  /** Whether the namespace carries the selecting label now (the relabel move changes it). */
  selected: boolean;
}

const rbac = "/apis/rbac.authorization.k8s.io/v1";

function itemsOf(ns: string, prune: GameConfig, keep: GameConfig): GameItem[] {
  const policyLabel = { "game.example/policy": "baseline" };
  const make = (
    id: ItemId,
    config: GameConfig,
    index: number,
    collection: string,
    template: KubeObject,
  ): GameItem => ({
    id,
    kind: template.kind!,
    name: template.metadata!.name!,
    collection,
    path: `${collection}/${template.metadata!.name}`,
    config,
    index,
    template,
  });
  return [
    make("configmap", prune, 0, `/api/v1/namespaces/${ns}/configmaps`, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "game-settings", labels: policyLabel },
      data: { mode: "strict", "limits.yaml": "cpu: 2\nmemory: 1Gi\n" },
    }),
    make("rolebinding", prune, 1, `${rbac}/namespaces/${ns}/rolebindings`, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "game-readers", labels: policyLabel },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: VIEWER_ROLE },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: "game-auditors" }],
    }),
    make("secret", keep, 0, `/api/v1/namespaces/${ns}/secrets`, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "game-token", labels: policyLabel },
      type: "Opaque",
      data: { token: btoa("s3cr3t-of-the-platform") },
    }),
    make("networkpolicy", keep, 1, `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies`, {
      apiVersion: "networking.k8s.io/v1",
      kind: "NetworkPolicy",
      metadata: { name: "game-ingress", labels: policyLabel },
      spec: {
        podSelector: {},
        policyTypes: ["Ingress"],
        ingress: [{ from: [{ namespaceSelector: { matchLabels: { "game.example/trusted": "true" } } }] }],
      },
    }),
    // A kind with a status subresource that takes label changes (resourcequotas/status keeps the old spec only).
    make("resourcequota", keep, 2, `/api/v1/namespaces/${ns}/resourcequotas`, {
      apiVersion: "v1",
      kind: "ResourceQuota",
      metadata: { name: "game-quota", labels: policyLabel },
      spec: { hard: { pods: "10", configmaps: "20" } },
    }),
    // A custom resource whose schema preserves unknown fields: a tenant may nest its content 10,000 levels deep.
    make("widget", keep, 3, `/apis/${WIDGET_GROUP}/v1/namespaces/${ns}/widgets`, {
      apiVersion: `${WIDGET_GROUP}/v1`,
      kind: "Widget",
      metadata: { name: "game-widget", labels: policyLabel },
      spec: { size: 3, tier: "gold", limits: { cpu: "2", memory: "1Gi" } },
    }),
  ];
}

async function createIgnoringExisting(admin: HttpKubeClient, path: string, body: unknown): Promise<void> {
  await admin.request({ method: "POST", path, body }).catch((e) => {
    if (!isAlreadyExists(e)) throw e;
  });
}

async function tokenFor(admin: HttpKubeClient, ns: string, sa: string): Promise<Identity> {
  const tr = await admin.request<{ status: { token: string } }>({
    method: "POST",
    path: `/api/v1/namespaces/${ns}/serviceaccounts/${sa}/token`,
    body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds: 3600 } },
  });
  return { username: `system:serviceaccount:${ns}:${sa}`, token: tr.status.token };
}

function actorClient(c: TestCluster, identity: Identity, userAgent: string): HttpKubeClient {
  // Not clientFor(): its user agent would make the default field manager "espejo-test".
  return new HttpKubeClient({
    server: c.server,
    caCerts: [c.caPem],
    authorization: () => `Bearer ${identity.token}`,
    userAgent,
  });
}

/**
 * The tenant: edits configmaps, secrets, rolebindings, networkpolicies, resourcequotas (their status too) and
 * widgets in `ns`, nothing else anywhere.
 */
async function createTenant(c: TestCluster, admin: HttpKubeClient, ns: string): Promise<Actor> {
  const verbs = ["get", "list", "watch", "create", "update", "patch", "delete"];
  await admin.request({
    method: "POST",
    path: `${rbac}/namespaces/${ns}/roles`,
    body: {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "tenant-editor" },
      rules: [
        { apiGroups: [""], resources: ["configmaps", "secrets", "resourcequotas", "resourcequotas/status"], verbs },
        { apiGroups: ["rbac.authorization.k8s.io"], resources: ["rolebindings"], verbs },
        { apiGroups: ["networking.k8s.io"], resources: ["networkpolicies"], verbs },
        { apiGroups: [WIDGET_GROUP], resources: ["widgets"], verbs },
      ],
    },
  });
  await admin.request({
    method: "POST",
    path: `/api/v1/namespaces/${ns}/serviceaccounts`,
    body: { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "tenant" } },
  });
  await admin.request({
    method: "POST",
    path: `${rbac}/namespaces/${ns}/rolebindings`,
    body: {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "tenant-editor" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "tenant-editor" },
      subjects: [{ kind: "ServiceAccount", name: "tenant", namespace: ns }],
    },
  });
  const identity = await tokenFor(admin, ns, "tenant");
  const client = actorClient(c, identity, "kubectl/v1.35.4 (tenant)");
  // The API server's RBAC authorizer learns of new bindings through its informers: wait until the tenant may act.
  await eventually(
    () => client.request({ method: "GET", path: `${rbac}/namespaces/${ns}/rolebindings`, query: { limit: 1 } }),
    15_000,
    `the tenant's RoleBinding in ${ns} to take effect`,
  );
  return { identity, client };
}

/** The namespace admin: may get and patch namespace `ns` itself (its labels), nothing else. */
async function createNamespaceAdmin(c: TestCluster, admin: HttpKubeClient, ns: string): Promise<Actor> {
  await admin.request({
    method: "POST",
    path: `/api/v1/namespaces/${ns}/serviceaccounts`,
    body: { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "ns-admin" } },
  });
  await admin.request({
    method: "POST",
    path: `${rbac}/clusterroles`,
    body: {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: `espejo-game-nsadmin-${ns}` },
      rules: [{ apiGroups: [""], resources: ["namespaces"], resourceNames: [ns], verbs: ["get", "patch"] }],
    },
  });
  await admin.request({
    method: "POST",
    path: `${rbac}/clusterrolebindings`,
    body: {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: `espejo-game-nsadmin-${ns}` },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: `espejo-game-nsadmin-${ns}` },
      subjects: [{ kind: "ServiceAccount", name: "ns-admin", namespace: ns }],
    },
  });
  const identity = await tokenFor(admin, ns, "ns-admin");
  const client = actorClient(c, identity, "kubectl/v1.35.4 (namespace admin)");
  await eventually(
    () => client.request({ method: "GET", path: `/api/v1/namespaces/${ns}` }),
    15_000,
    `the namespace admin's ClusterRoleBinding for ${ns} to take effect`,
  );
  return { identity, client };
}

/** The two ClusterRoles a game's RoleBinding may point at (cluster-scoped, shared by every game). */
async function ensureBindableRoles(admin: HttpKubeClient): Promise<void> {
  for (const [name, resource] of [[VIEWER_ROLE, "configmaps"], [OTHER_ROLE, "secrets"]]) {
    await createIgnoringExisting(admin, `${rbac}/clusterroles`, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name },
      rules: [{ apiGroups: [""], resources: [resource], verbs: ["get", "list"] }],
    });
  }
}

/**
 * The Widget kind, shared by every game and left in place: its CRD (namespaced Widgets, every field preserved, so a
 * tenant may nest them as deep as the API server stores), Established and served, and a ClusterRole that lets espejo
 * sync Widgets, aggregated into espejo-manager. Applied each time (server-side apply: a no-op when it is there).
 */
async function ensureWidgetKind(admin: HttpKubeClient): Promise<void> {
  const crd = `widgets.${WIDGET_GROUP}`;
  await applyYaml(admin, widgetKindYaml(WIDGET_GROUP, "espejo-game-widgets"));
  await eventually(
    async () => {
      const o = await admin.request<{ status?: { conditions?: { type: string; status: string }[] } }>({
        method: "GET",
        path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd}`,
      });
      return o.status?.conditions?.some((c) => c.type === "Established" && c.status === "True");
    },
    30_000,
    `CRD ${crd} to be Established`,
  );
  await eventually(
    () => admin.request({ method: "GET", path: `/apis/${WIDGET_GROUP}/v1/widgets`, query: { limit: 1 } }),
    30_000,
    `Widgets to be served`,
  );
  await eventually(
    async () => {
      const role = await admin.request<{ rules?: { apiGroups?: string[] }[] }>({
        method: "GET",
        path: `${rbac}/clusterroles/espejo-manager`,
      });
      return role.rules?.some((r) => r.apiGroups?.includes(WIDGET_GROUP));
    },
    60_000,
    `ClusterRole espejo-manager to aggregate the right to sync widgets.${WIDGET_GROUP}`,
  );
}

/**
 * Sets up a world and waits until espejo has synced every item: the game starts from a converged state, so what
 * happens afterwards is the tenant's doing.
 */
export async function createWorld(cluster: TestCluster, intervalMs: number): Promise<World> {
  const admin = clientFor(cluster);
  const gameId = uniqueName("g");
  const cfgNs = `${gameId}-cfg`;
  const ns = `${gameId}-tenant`;
  await ensureBindableRoles(admin);
  await ensureWidgetKind(admin);
  await createNamespace(admin, ns, { [SELECT_LABEL]: gameId });
  const tenant = await createTenant(cluster, admin, ns);
  const nsAdmin = await createNamespaceAdmin(cluster, admin, ns);
  const controller = await startController(cluster, {
    watchNamespace: cfgNs,
    reconcileIntervalMs: intervalMs,
    optIn: ["secrets"],
  });
  const prune: GameConfig = { name: "game-prune", key: `${cfgNs}/game-prune`, prune: true };
  const keep: GameConfig = { name: "game-keep", key: `${cfgNs}/game-keep`, prune: false };
  const items = itemsOf(ns, prune, keep);
  for (const config of [prune, keep]) {
    const spec = {
      namespaceSelector: { labelSelector: { matchLabels: { [SELECT_LABEL]: gameId } } },
      syncItems: items.filter((i) => i.config === config).sort((a, b) => a.index - b.index).map((i) => i.template),
    };
    await admin.request({
      method: "POST",
      path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${cfgNs}/syncconfigs`,
      body: {
        apiVersion: "sync.appuio.ch/v1alpha1",
        kind: "SyncConfig",
        metadata: {
          name: config.name,
          annotations: config.prune ? { "sync.appuio.ch/prune": "true" } : {},
        },
        spec,
      },
    });
  }
  const world: World = {
    cluster,
    admin,
    cfgNs,
    ns,
    gameId,
    tenant,
    nsAdmin,
    configs: [prune, keep],
    items,
    controller,
    intervalMs,
    selected: true,
  };
  // 60 s: the first world of a fresh control plane on a machine busy with other tests (load 30 on 2 cores) once took
  // more than 30 s to report game-prune synchronized.
  for (const config of world.configs) {
    const count = items.filter((i) => i.config === config).length;
    await eventually(
      async () => {
        const s = await statusOf(admin, cfgNs, config.name);
        return s.synchronizedItemCount === count && s.failedItemCount === 0;
      },
      60_000,
      `SyncConfig ${config.key} to report its ${count} items synchronized before the game starts`,
    );
  }
  return world;
}

/**
 * Stops the controller and removes the world: finalizers the tenant left (they would hold the namespace's
 * deletion for ever) and espejo's pruning finalizer on the SyncConfigs (nobody runs to remove it any more).
 */
export async function destroyWorld(w: World): Promise<void> {
  await w.controller.stop();
  const unfinalize = (path: string) =>
    w.admin.request({
      method: "PATCH",
      path,
      contentType: "application/merge-patch+json",
      body: { metadata: { finalizers: null } },
    }).catch((e) => {
      if (!isNotFound(e)) throw e;
    });
  for (const item of w.items) await unfinalize(item.path);
  for (const config of w.configs) {
    await unfinalize(`/apis/sync.appuio.ch/v1alpha1/namespaces/${w.cfgNs}/syncconfigs/${config.name}`);
  }
  const remove = (path: string) =>
    w.admin.request({ method: "DELETE", path }).catch((e) => {
      if (!isNotFound(e)) throw e;
    });
  await remove(`${rbac}/clusterrolebindings/espejo-game-nsadmin-${w.ns}`);
  await remove(`${rbac}/clusterroles/espejo-game-nsadmin-${w.ns}`);
  await remove(`${rbac}/clusterrolebindings/${w.cfgNs}-espejo-espejo-manager`);
  await remove(`/api/v1/namespaces/${w.ns}`);
  await remove(`/api/v1/namespaces/${w.cfgNs}`);
  w.tenant.client.close();
  w.nsAdmin.client.close();
  w.admin.close();
}
