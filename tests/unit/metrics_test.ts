import assert from "node:assert/strict";
import fc from "fast-check";
import { Metrics, resourceOfPath } from "../../lib/metrics/metrics.ts";

const PATHS: [path: string, resource: string, named: boolean][] = [
  // core group
  ["/api/v1/namespaces", "namespaces", false],
  ["/api/v1/namespaces/team-a", "namespaces", true],
  ["/api/v1/configmaps", "configmaps", false],
  ["/api/v1/namespaces/team-a/configmaps", "configmaps", false],
  ["/api/v1/namespaces/team-a/configmaps/cm", "configmaps", true],
  ["/api/v1/namespaces/team-a/secrets/s?fieldManager=espejo", "secrets", true],
  ["/api/v1/namespaces/team-a/configmaps?labelSelector=sync.appuio.ch/managed-by%3Despejo", "configmaps", false],
  ["/api/v1/namespaces/team-a/configmaps?labelSelector=a/b&watch=true", "configmaps", false],
  ["/api/v1/nodes/n1", "nodes", true],
  // named groups
  ["/apis/apps/v1/deployments", "deployments", false],
  ["/apis/apps/v1/namespaces/team-a/deployments", "deployments", false],
  ["/apis/apps/v1/namespaces/team-a/deployments/web", "deployments", true],
  ["/apis/rbac.authorization.k8s.io/v1/clusterroles/view", "clusterroles", true],
  ["/apis/coordination.k8s.io/v1/namespaces/espejo/leases/bd39f6a0.appuio.ch", "leases", true],
  ["/apis/sync.appuio.ch/v1alpha1/syncconfigs", "syncconfigs", false],
  ["/apis/sync.appuio.ch/v1alpha1/namespaces/espejo/syncconfigs", "syncconfigs", false],
  ["/apis/sync.appuio.ch/v1alpha1/namespaces/espejo/syncconfigs/tenant", "syncconfigs", true],
  // subresources
  ["/apis/sync.appuio.ch/v1alpha1/namespaces/espejo/syncconfigs/tenant/status", "syncconfigs/status", true],
  ["/apis/apps/v1/namespaces/team-a/deployments/web/scale", "deployments/scale", true],
  ["/api/v1/nodes/n1/status", "nodes/status", true],
  // discovery
  ["/api", "discovery", false],
  ["/api/v1", "discovery", false],
  ["/apis", "discovery", false],
  ["/apis/apps/v1", "discovery", false],
  ["/apis/sync.appuio.ch/v1alpha1", "discovery", false],
  ["/version", "discovery", false],
];

for (const [path, resource, named] of PATHS) {
  Deno.test(`resourceOfPath of ${path} is ${resource}${named ? " (named)" : ""}`, () => {
    assert.deepEqual(resourceOfPath(path), { resource, named });
  });
}

Deno.test({
  name: "resourceOfPath of a namespace's own subresource is namespaces/<subresource>",
  fn() {
    assert.deepEqual(resourceOfPath("/api/v1/namespaces/team-a/status"), {
      resource: "namespaces/status",
      named: true,
    });
    assert.deepEqual(resourceOfPath("/api/v1/namespaces/team-a/finalize"), {
      resource: "namespaces/finalize",
      named: true,
    });
  },
});

Deno.test("resourceOfPath finds the plural of any namespaced path in either group form", () => {
  const seg = fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/).filter((s) => s !== "namespaces");
  fc.assert(
    fc.property(
      fc.constantFrom("/api/v1", "/apis/apps/v1", "/apis/sync.appuio.ch/v1alpha1"),
      seg,
      seg,
      fc.option(seg, { nil: undefined }),
      fc.option(seg, { nil: undefined }),
      (prefix, ns, resource, name, sub) => {
        const collection = `${prefix}/namespaces/${ns}/${resource}`;
        assert.deepEqual(resourceOfPath(collection), { resource, named: false });
        if (name === undefined) return;
        assert.deepEqual(resourceOfPath(`${collection}/${name}`), { resource, named: true });
        if (sub === undefined) return;
        assert.deepEqual(resourceOfPath(`${collection}/${name}/${sub}?x=1`), {
          resource: `${resource}/${sub}`,
          named: true,
        });
      },
    ),
  );
});

/** The value of espejo_api_requests_total for one label set. */
async function requests(m: Metrics, labels: Partial<Record<"verb" | "resource" | "code", string>>): Promise<number> {
  const { values } = await m.apiRequests.get();
  return values.filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k as keyof typeof labels] === l))
    .reduce((n, v) => n + v.value, 0);
}

const VERBS: [method: "GET" | "PUT" | "POST" | "DELETE", path: string, watch: boolean, verb: string, res: string][] = [
  ["GET", "/api/v1/namespaces/a/configmaps", false, "LIST", "configmaps"],
  ["GET", "/api/v1/namespaces/a/configmaps/b", false, "GET", "configmaps"],
  ["GET", "/api/v1/namespaces/a/configmaps", true, "WATCH", "configmaps"],
  ["PUT", "/api/v1/namespaces/a/configmaps/b", false, "PUT", "configmaps"],
  ["POST", "/api/v1/namespaces/a/configmaps", false, "POST", "configmaps"],
  ["DELETE", "/api/v1/namespaces/a/configmaps/b", false, "DELETE", "configmaps"],
  ["PUT", "/apis/sync.appuio.ch/v1alpha1/namespaces/e/syncconfigs/s/status", false, "PUT", "syncconfigs/status"],
];

for (const [method, path, watch, verb, resource] of VERBS) {
  Deno.test(`Metrics.observeResponse counts ${method}${watch ? " watch" : ""} ${path} as ${verb} ${resource}`, async () => {
    const m = new Metrics();
    m.observeResponse({ method, path, watch, code: 200 });
    m.observeResponse({ method, path, watch, code: 200 });
    m.observeResponse({ method, path, watch, code: 0 });
    assert.equal(await requests(m, { verb, resource, code: "200" }), 2);
    assert.equal(await requests(m, { verb, resource, code: "0" }), 1);
    assert.equal(await requests(m, {}), 3);
  });
}
