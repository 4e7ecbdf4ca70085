import assert from "node:assert/strict";
import type { KubeObject } from "../../lib/kube/objects.ts";
import { explainedByDefaults } from "../../lib/plan/server_defaults.ts";

const meta = { name: "x", namespace: "ns" };
const liveMeta = { ...meta, uid: "u", resourceVersion: "1", creationTimestamp: "2026-01-01T00:00:00Z" };
const obj = (apiVersion: string, kind: string, rest: Record<string, unknown>, m: object = meta) =>
  ({ apiVersion, kind, metadata: m, ...rest }) as KubeObject;

Deno.test("explainedByDefaults: the server's defaults of the built-in kinds are no change, anything else is", async (t) => {
  const cases: [string, KubeObject, KubeObject, boolean][] = [
    [
      "a Secret without a type is stored as Opaque",
      obj("v1", "Secret", { data: { a: "YQ==" } }),
      obj("v1", "Secret", { data: { a: "YQ==" }, type: "Opaque" }, liveMeta),
      true,
    ],
    [
      "a Secret of another type than the live one",
      obj("v1", "Secret", { data: { a: "YQ==" } }),
      obj("v1", "Secret", { data: { a: "YQ==" }, type: "kubernetes.io/tls" }, liveMeta),
      false,
    ],
    [
      "a key someone added to a Secret",
      obj("v1", "Secret", { data: { a: "YQ==" } }),
      obj("v1", "Secret", { data: { a: "YQ==", b: "Yg==" }, type: "Opaque" }, liveMeta),
      false,
    ],
    [
      "a NetworkPolicy with egress: [] gets policyTypes and loses the empty list",
      obj("networking.k8s.io/v1", "NetworkPolicy", { spec: { podSelector: {}, egress: [] } }),
      obj("networking.k8s.io/v1", "NetworkPolicy", { spec: { podSelector: {}, policyTypes: ["Ingress"] } }, liveMeta),
      true,
    ],
    [
      "a NetworkPolicy with egress rules gets Egress too",
      obj("networking.k8s.io/v1", "NetworkPolicy", { spec: { podSelector: {}, egress: [{}] } }),
      obj("networking.k8s.io/v1", "NetworkPolicy", {
        spec: { podSelector: {}, egress: [{}], policyTypes: ["Ingress", "Egress"] },
      }, liveMeta),
      true,
    ],
    [
      "a NetworkPolicy whose policyTypes someone changed",
      obj("networking.k8s.io/v1", "NetworkPolicy", { spec: { podSelector: {} } }),
      obj("networking.k8s.io/v1", "NetworkPolicy", { spec: { podSelector: {}, policyTypes: ["Egress"] } }, liveMeta),
      false,
    ],
    [
      "a RoleBinding's User subject gets the RBAC apiGroup",
      obj("rbac.authorization.k8s.io/v1", "RoleBinding", {
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "view" },
        subjects: [{ kind: "User", name: "alice" }, { kind: "ServiceAccount", name: "sa", namespace: "ns" }],
      }),
      obj("rbac.authorization.k8s.io/v1", "RoleBinding", {
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "view" },
        subjects: [
          { kind: "User", name: "alice", apiGroup: "rbac.authorization.k8s.io" },
          { kind: "ServiceAccount", name: "sa", namespace: "ns" },
        ],
      }, liveMeta),
      true,
    ],
    [
      "a ConfigMap with an annotation someone added",
      obj("v1", "ConfigMap", { data: { a: "1" } }),
      obj("v1", "ConfigMap", { data: { a: "1" } }, { ...liveMeta, annotations: { extra: "x" } }),
      false,
    ],
    [
      "an empty map the server keeps is not dropped",
      obj("v1", "ConfigMap", { data: { a: "" } }),
      obj("v1", "ConfigMap", { data: { a: "" } }, liveMeta),
      true,
    ],
    [
      "a Service gets its type, its allocated addresses and the port defaults",
      obj("v1", "Service", { spec: { selector: { app: "a" }, ports: [{ port: 80 }] } }),
      obj("v1", "Service", {
        spec: {
          selector: { app: "a" },
          ports: [{ port: 80, protocol: "TCP", targetPort: 80 }],
          type: "ClusterIP",
          sessionAffinity: "None",
          clusterIP: "10.0.0.1",
          clusterIPs: ["10.0.0.1"],
          ipFamilies: ["IPv4"],
          ipFamilyPolicy: "SingleStack",
          internalTrafficPolicy: "Cluster",
        },
      }, liveMeta),
      true,
    ],
    [
      "a Container LimitRange's default comes from max, its defaultRequest from default, else min",
      obj("v1", "LimitRange", {
        spec: {
          limits: [{ type: "Container", max: { cpu: "2" }, min: { memory: "1Mi" }, default: { memory: "8Mi" } }],
        },
      }),
      obj("v1", "LimitRange", {
        spec: {
          limits: [{
            type: "Container",
            max: { cpu: "2" },
            min: { memory: "1Mi" },
            default: { cpu: "2", memory: "8Mi" },
            defaultRequest: { cpu: "2", memory: "8Mi" },
          }],
        },
      }, liveMeta),
      true,
    ],
    [
      "a kind the rules do not know, with a field the item does not set",
      obj("example.com/v1", "Widget", { spec: { a: 1 } }),
      obj("example.com/v1", "Widget", { spec: { a: 1, b: 2 } }, liveMeta),
      false,
    ],
  ];
  for (const [name, desired, live, noop] of cases) {
    await t.step(name, () => assert.equal(explainedByDefaults(desired, live), noop));
  }
});
