/**
 * espejo's rules for what the API server adds to an object, for `espejo plan` when it may not ask the server (a
 * dry run needs the write verbs): a write whose only differences from the live object are these is a no-op, and is
 * no change. The controller learns the same from its first write's reply (lib/model/drift.ts, `extrasOf`); the plan
 * cannot write, so it knows the defaults of the built-in kinds espejo is used for, and Go's `omitempty` (an empty
 * list or map the item sets is dropped by the server). What these rules do not know stays an update,
 * marked unexplained: only a dry run tells.
 */
import { isObject, type KubeObject } from "../kube/objects.ts";
import { compareByValue } from "../model/drift.ts";

type Obj = Record<string, unknown>;
const RBAC = "rbac.authorization.k8s.io";

/** Defaults per `apiVersion|kind`: they may read the live object for values the server allocates (a clusterIP). */
const DEFAULTS: Record<string, (o: Obj, live: Obj) => void> = {
  "v1|Secret": (o) => {
    o.type ??= "Opaque";
  },
  "networking.k8s.io/v1|NetworkPolicy": (o) => {
    const spec = (o.spec ??= {}) as Obj;
    // The server's rule: Ingress always, Egress when the spec has egress rules.
    spec.policyTypes ??= Array.isArray(spec.egress) && spec.egress.length ? ["Ingress", "Egress"] : ["Ingress"];
  },
  "v1|LimitRange": (o) => {
    const spec = isObject(o.spec) ? o.spec : {};
    if (!Array.isArray(spec.limits)) return;
    // A Container limit's default is its max, its defaultRequest its default, else its min (per resource).
    spec.limits = spec.limits.map((l) => {
      if (!isObject(l) || l.type !== "Container") return l;
      const map = (v: unknown) => (isObject(v) ? v : {});
      const def = { ...map(l.max), ...map(l.default) };
      const request = { ...map(l.min), ...def, ...map(l.defaultRequest) };
      return { ...l, default: def, defaultRequest: request };
    });
  },
  "rbac.authorization.k8s.io/v1|RoleBinding": subjectsDefaults,
  "rbac.authorization.k8s.io/v1|ClusterRoleBinding": subjectsDefaults,
  "v1|Service": (o, live) => {
    const spec = (o.spec ??= {}) as Obj;
    const liveSpec = isObject(live.spec) ? live.spec : {};
    spec.type ??= "ClusterIP";
    spec.sessionAffinity ??= "None";
    if (spec.type === "ClusterIP" || spec.type === "NodePort" || spec.type === "LoadBalancer") {
      spec.internalTrafficPolicy ??= "Cluster";
      for (const allocated of ["clusterIP", "clusterIPs", "ipFamilies"]) spec[allocated] ??= liveSpec[allocated];
      spec.ipFamilyPolicy ??= "SingleStack";
    }
    if (Array.isArray(spec.ports)) {
      spec.ports = spec.ports.map((p) => isObject(p) ? { protocol: "TCP", targetPort: p.port, ...p } : p);
    }
  },
};

function subjectsDefaults(o: Obj): void {
  if (!Array.isArray(o.subjects)) return;
  o.subjects = o.subjects.map((s) =>
    // A ServiceAccount's group is "", which the reply leaves out (omitempty); Users and Groups get RBAC's.
    isObject(s) && s.apiGroup === undefined && s.kind !== "ServiceAccount" ? { ...s, apiGroup: RBAC } : s
  );
}

/** What the server stores for `desired`, as far as the rules know, given the `live` object it replaces. */
export function withKnownDefaults(desired: KubeObject, live: KubeObject): KubeObject {
  const copy = structuredClone(desired) as Obj;
  DEFAULTS[`${desired.apiVersion}|${desired.kind}`]?.(copy, live as Obj);
  return withoutEmpty(copy, live) as KubeObject;
}

/**
 * Go's `omitempty`: an empty list or map the item sets is not in the server's reply. Dropped only where the live
 * object has nothing: a required field (a NetworkPolicy's `podSelector: {}`) is kept by the server.
 */
function withoutEmpty(v: unknown, live: unknown): unknown {
  if (Array.isArray(v)) return v.map((x, i) => withoutEmpty(x, Array.isArray(live) ? live[i] : undefined));
  if (!isObject(v)) return v;
  const out: Obj = {};
  const l = isObject(live) ? live : {};
  for (const [k, x] of Object.entries(v)) {
    const kept = withoutEmpty(x, l[k]);
    const empty = kept === undefined || (Array.isArray(kept) && kept.length === 0) ||
      (isObject(kept) && Object.keys(kept).length === 0);
    if (!empty || l[k] !== undefined) out[k] = kept;
  }
  return out;
}

/** Whether replacing `live` with `desired` would be a no-op by these rules. */
export function explainedByDefaults(desired: KubeObject, live: KubeObject): boolean {
  return compareByValue(withKnownDefaults(desired, live), live).kind === "equal";
}
