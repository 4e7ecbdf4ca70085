/** The test control plane's own features: restricted identities, audit log, API server restart, missing Go. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ApiError } from "../../lib/kube/errors.ts";
import { Reflector } from "../../lib/kube/reflector.ts";
import { ControlPlane, createServiceAccount } from "../../testenv/controlplane.ts";
import { auditEvents, clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";
import { repoRoot } from "../../testenv/build.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test("A restricted identity gets 403 outside its ClusterRole and succeeds inside it", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const ns = uniqueName("ident");
  try {
    await admin.request({
      method: "POST",
      path: "/apis/rbac.authorization.k8s.io/v1/clusterroles",
      body: {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRole",
        metadata: { name: `${ns}-cm-reader` },
        rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["list"] }],
      },
    });
    const identity = await createServiceAccount(admin, ns, "reader", `${ns}-cm-reader`);
    assert.equal(identity.username, `system:serviceaccount:${ns}:reader`);
    const restricted = clientFor(c, identity);
    try {
      // RBAC changes reach the authorizer's cache within moments; poll instead of assuming.
      await eventually(() => restricted.request({ method: "GET", path: `/api/v1/namespaces/${ns}/configmaps` }));
      await assert.rejects(
        restricted.request({ method: "GET", path: `/api/v1/namespaces/${ns}/secrets` }),
        (e) => e instanceof ApiError && e.code === 403 && e.reason === "Forbidden",
      );
    } finally {
      restricted.close();
    }
  } finally {
    admin.close();
  }
});

Deno.test("The audit log records requests by user, verb and namespace", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const ns = uniqueName("audit");
  try {
    await namespaceWithConfigMap(admin, ns, "audited");
    const event = await eventually(async () =>
      (await auditEvents(c)).find((e) =>
        e.verb === "create" && e.objectRef?.namespace === ns && e.objectRef?.resource === "configmaps"
      )
    );
    assert.equal(event.user.username, c.admin.username);
    assert.equal(event.responseStatus?.code, 201);
  } finally {
    admin.close();
  }
});

Deno.test("Deleting a namespace completes (the namespace controller runs)", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const ns = uniqueName("doomed");
  try {
    await namespaceWithConfigMap(admin, ns, "content");
    await admin.request({ method: "DELETE", path: `/api/v1/namespaces/${ns}` });
    await eventually(
      () =>
        admin.request({ method: "GET", path: `/api/v1/namespaces/${ns}` }).then(
          () => false,
          (e) => e instanceof ApiError && e.code === 404,
        ),
      60_000,
      "the namespace to be gone",
    );
  } finally {
    admin.close();
  }
});

Deno.test("The API server restarts on the same port and etcd, and a watch resumes", opts, async () => {
  const cp = await ControlPlane.start({ controllerManager: false, log: () => {} });
  const client = cp.client();
  const stop = new AbortController();
  try {
    const seen = new Set<string>();
    const reflector = new Reflector(client, {
      path: "/api/v1/namespaces",
      decode: (raw) => raw.metadata?.name,
      onChange: (type, name) => type !== "deleted" && name && seen.add(name),
    });
    reflector.run(stop.signal);
    await reflector.synced;
    const create = (name: string) =>
      client.request({
        method: "POST",
        path: "/api/v1/namespaces",
        body: { apiVersion: "v1", kind: "Namespace", metadata: { name } },
      });
    await create("before-restart");
    await eventually(() => seen.has("before-restart"));
    await cp.stopApiServer();
    await assert.rejects(client.request({ method: "GET", path: "/api/v1/namespaces/default" }));
    await cp.startApiServer();
    await create("after-restart");
    await eventually(() => seen.has("after-restart"), 30_000, "the watch to resume after the restart");
    assert.ok(reflector.get("before-restart"), "data survived in etcd");
  } finally {
    stop.abort();
    client.close();
    await cp.stop();
  }
});

Deno.test("Without Go and without KUBEBUILDER_ASSETS the build names both ways out", opts, async () => {
  const home = await Deno.makeTempDir();
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", join(repoRoot, "testenv/build.ts")],
      env: { PATH: "/nonexistent", HOME: home, KUBEBUILDER_ASSETS: "" },
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.success, false);
    assert.match(stderr, /Go is not installed and KUBEBUILDER_ASSETS is not set/);
    assert.match(stderr, /install Go/);
    assert.match(stderr, /set KUBEBUILDER_ASSETS/);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

async function namespaceWithConfigMap(admin: ReturnType<typeof clientFor>, ns: string, configMap: string) {
  await admin.request({
    method: "POST",
    path: "/api/v1/namespaces",
    body: { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } },
  });
  await admin.request({
    method: "POST",
    path: `/api/v1/namespaces/${ns}/configmaps`,
    body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: configMap } },
  });
}
