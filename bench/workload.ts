/** The benchmark's SyncConfigs: M configs of K=4 items (ConfigMap, Role, RoleBinding, NetworkPolicy) and 2 deleteItems. */
export const BENCH_LABEL = "espejo-bench/tenant";
export const ITEMS_PER_CONFIG = 4;
/** The collections of the items' kinds, cluster-wide. */
export const ITEM_COLLECTIONS = [
  "/api/v1/configmaps",
  "/apis/rbac.authorization.k8s.io/v1/roles",
  "/apis/rbac.authorization.k8s.io/v1/rolebindings",
  "/apis/networking.k8s.io/v1/networkpolicies",
];

export function benchSyncConfig(index: number, version = "1"): Record<string, unknown> {
  const n = `c${index}`;
  return {
    apiVersion: "sync.appuio.ch/v1alpha1",
    kind: "SyncConfig",
    metadata: { name: `bench-${n}` },
    spec: {
      namespaceSelector: { labelSelector: { matchLabels: { [BENCH_LABEL]: "yes" } } },
      syncItems: [
        {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: `${n}-info` },
          data: { namespace: "${PROJECT_NAME}", version },
        },
        {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "Role",
          metadata: { name: `${n}-reader` },
          rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list"] }],
        },
        {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "RoleBinding",
          metadata: { name: `${n}-reader` },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: `${n}-reader` },
          subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: "${PROJECT_NAME}-members" }],
        },
        {
          apiVersion: "networking.k8s.io/v1",
          kind: "NetworkPolicy",
          metadata: { name: `${n}-same-namespace` },
          spec: { podSelector: {}, ingress: [{ from: [{ podSelector: {} }] }] },
        },
      ],
      deleteItems: [
        { apiVersion: "v1", kind: "ConfigMap", name: `${n}-retired` },
        { apiVersion: "v1", kind: "Secret", name: `${n}-retired-\${PROJECT_NAME}` },
      ],
    },
  };
}
