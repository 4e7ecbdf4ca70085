/** espejo's own behaviours, against the real API server, with the controller under deploy/'s RBAC. */
import assert from "node:assert/strict";
import { clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";
import { MAX_KEPT_REFERENCES } from "../../lib/sync/cached_object.ts";
import {
  auditNow,
  condition,
  counterValue,
  createNamespace,
  createSyncConfig,
  getObject,
  requestsBy,
  startController,
  statusOf,
  type TestObject,
} from "../../testenv/harness.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const cmPath = (ns: string, name: string) => `/api/v1/namespaces/${ns}/configmaps/${name}`;

Deno.test("Controller creates items with ${PROJECT_NAME} replaced, only in selected namespaces", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const prefix = uniqueName("t");
  const ctl = await startController(c, { watchNamespace: cfgNs });
  try {
    await createNamespace(admin, `${prefix}-a`);
    await createNamespace(admin, `${prefix}-b`, { "espejo-test/tenant": prefix });
    await createNamespace(admin, `${prefix}-ignored`);
    await createNamespace(admin, `${prefix}x-other`);
    const since = auditNow();
    await createSyncConfig(admin, cfgNs, "defaults", {
      namespaceSelector: {
        matchNames: [`${prefix}-a`, `${prefix}-ign.*`],
        labelSelector: { matchLabels: { "espejo-test/tenant": prefix } },
        ignoreNames: [`${prefix}-ignored`],
      },
      syncItems: [
        {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: "info", annotations: { team: "${PROJECT_NAME}" } },
          data: { namespace: "${PROJECT_NAME}", url: "https://example.com/${PROJECT_NAME}/x" },
        },
        {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "Role",
          metadata: { name: "reader" },
          rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get"] }],
        },
        // Written after the Role it binds (items go in order); espejo holds no `bind`, so the Role must exist.
        {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "RoleBinding",
          metadata: { name: "reader" },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "reader" },
          subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: "${PROJECT_NAME}-readers" }],
        },
      ],
    });
    for (const ns of [`${prefix}-a`, `${prefix}-b`]) {
      const cm = await eventually(() => getObject(admin, cmPath(ns, "info")), 20_000, `ConfigMap in ${ns}`);
      assert.deepEqual(cm.data, { namespace: ns, url: `https://example.com/${ns}/x` });
      assert.equal(cm.metadata?.annotations?.team, ns);
      await eventually(() => getObject(admin, `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles/reader`));
    }
    const s = await eventually(
      async () => {
        const s = await statusOf(admin, cfgNs, "defaults");
        return s.synchronizedItemCount === 6 ? s : undefined;
      },
      20_000,
      "status to count 6 synchronized items",
    );
    assert.equal(s.failedItemCount, 0);
    const refused = (await requestsBy(c, ctl.identity, since)).filter((e) => (e.responseStatus?.code ?? 0) >= 400);
    assert.deepEqual(refused.map((e) => `${e.verb} ${e.requestURI} ${e.responseStatus?.code}`), [], "no write failed");
    assert.equal(condition(s, "Ready")?.status, "True");
    assert.equal(condition(s, "Ready")?.reason, "SynchronizationSucceeded");
    for (const ns of [`${prefix}-ignored`, `${prefix}x-other`]) {
      assert.equal(await getObject(admin, cmPath(ns, "info")), undefined, `nothing in ${ns}`);
    }
  } finally {
    await ctl.stop();
    admin.close();
  }
});

Deno.test("Controller writes back a drifted object: wrong value replaced, extra key removed", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ns = uniqueName("drift");
  const ctl = await startController(c, { watchNamespace: cfgNs });
  try {
    await createNamespace(admin, ns);
    await createSyncConfig(admin, cfgNs, "drift", {
      namespaceSelector: { matchNames: [ns] },
      syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "conf" }, data: { a: "1", b: "2" } }],
    });
    await eventually(() => getObject(admin, cmPath(ns, "conf")), 20_000, "ConfigMap created");
    await admin.request({
      method: "PATCH",
      path: cmPath(ns, "conf"),
      query: { fieldManager: "kubectl-edit" },
      contentType: "application/merge-patch+json",
      body: { data: { a: "wrong", extra: "added by hand" } },
    });
    const restored = await eventually(
      async () => {
        const cm = await getObject(admin, cmPath(ns, "conf"));
        return cm?.data && (cm.data as Record<string, string>).a === "1" && !("extra" in (cm.data as object))
          ? cm
          : undefined;
      },
      20_000,
      "the drifted ConfigMap to be written back",
    );
    assert.deepEqual(restored.data, { a: "1", b: "2" });
    // Removing a key is drift too.
    await admin.request({
      method: "PATCH",
      path: cmPath(ns, "conf"),
      query: { fieldManager: "kubectl-edit" },
      contentType: "application/json-patch+json",
      body: [{ op: "remove", path: "/data/b" }],
    });
    await eventually(async () => (await getObject(admin, cmPath(ns, "conf")))?.data?.b === "2", 20_000, "b restored");
  } finally {
    await ctl.stop();
    admin.close();
  }
});

Deno.test("Controller recreates an object whose update is invalid only with forceRecreate", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ns = uniqueName("recreate");
  const ctl = await startController(c, { watchNamespace: cfgNs });
  const scPath = `/apis/sync.appuio.ch/v1alpha1/namespaces/${cfgNs}/syncconfigs`;
  const spec = (value: string, forceRecreate: boolean) => ({
    forceRecreate,
    namespaceSelector: { matchNames: [ns] },
    syncItems: [{
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "frozen" },
      immutable: true,
      data: { v: value },
    }],
  });
  try {
    await createNamespace(admin, ns);
    await createSyncConfig(admin, cfgNs, "plain", spec("1", false));
    const first = await eventually(() => getObject(admin, cmPath(ns, "frozen")), 20_000, "ConfigMap created");
    // Without forceRecreate the rejected update fails the item, with the API server's reason.
    await admin.request({
      method: "PATCH",
      path: `${scPath}/plain`,
      contentType: "application/merge-patch+json",
      body: { spec: spec("2", false) },
    });
    const failed = await eventually(
      async () => {
        const s = await statusOf(admin, cfgNs, "plain");
        return s.failedItemCount === 1 ? s : undefined;
      },
      20_000,
      "the item to fail",
    );
    assert.match(condition(failed, "Errored")?.message ?? "", /ConfigMap frozen.*in namespace .*Invalid/);
    assert.equal(condition(failed, "Ready")?.status, "False");
    assert.equal((await getObject(admin, cmPath(ns, "frozen")))?.data?.v, "1");
    // With forceRecreate it is deleted and created anew.
    await admin.request({
      method: "PATCH",
      path: `${scPath}/plain`,
      contentType: "application/merge-patch+json",
      body: { spec: spec("2", true) },
    });
    const recreated = await eventually(
      async () => {
        const cm = await getObject(admin, cmPath(ns, "frozen"));
        return cm?.data?.v === "2" ? cm : undefined;
      },
      20_000,
      "the ConfigMap to be recreated",
    );
    assert.notEqual(recreated.metadata?.uid, first.metadata?.uid);
    await eventually(async () => (await statusOf(admin, cfgNs, "plain")).failedItemCount === 0, 20_000, "recovery");
  } finally {
    await ctl.stop();
    admin.close();
  }
});

Deno.test("Controller deletes deleteItems, and an absent one costs no request", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ns = uniqueName("del");
  const ctl = await startController(c, { watchNamespace: cfgNs });
  try {
    await createNamespace(admin, ns);
    for (const name of ["legacy-" + ns, "keep"]) {
      await admin.request({
        method: "POST",
        path: `/api/v1/namespaces/${ns}/configmaps`,
        body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name } },
      });
    }
    const since = auditNow();
    await createSyncConfig(admin, cfgNs, "cleanup", {
      namespaceSelector: { matchNames: [ns] },
      deleteItems: [
        { apiVersion: "v1", kind: "ConfigMap", name: "legacy-${PROJECT_NAME}" },
        { apiVersion: "v1", kind: "ConfigMap", name: "never-existed" },
      ],
    });
    await eventually(async () => !(await getObject(admin, cmPath(ns, "legacy-" + ns))), 20_000, "legacy deleted");
    assert.ok(await getObject(admin, cmPath(ns, "keep")), "an object not named is left alone");
    await eventually(async () => condition(await statusOf(admin, cfgNs, "cleanup"), "Ready")?.status === "True");
    const deletes = (await requestsBy(c, ctl.identity, since)).filter((e) => e.verb === "delete");
    assert.deepEqual(deletes.map((e) => e.objectRef?.name), ["legacy-" + ns]);
  } finally {
    await ctl.stop();
    admin.close();
  }
});

Deno.test("Controller reports an invalid spec in the Invalid condition and syncs nothing", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ns = uniqueName("inv");
  const ctl = await startController(c, { watchNamespace: cfgNs });
  try {
    await createNamespace(admin, ns);
    await createSyncConfig(admin, cfgNs, "broken", {
      namespaceSelector: { matchNames: [ns, "(unclosed"] },
      syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x" } }],
    });
    const s = await eventually(
      async () => {
        const s = await statusOf(admin, cfgNs, "broken");
        return condition(s, "Invalid") ? s : undefined;
      },
      20_000,
      "the Invalid condition",
    );
    const invalid = condition(s, "Invalid")!;
    assert.equal(invalid.status, "True");
    assert.equal(invalid.reason, "InvalidSyncConfigSpec");
    assert.match(
      invalid.message ?? "",
      /SyncConfig .*\/broken: \.spec\.namespaceSelector\.matchNames\[1\] is not a valid regular expression: missing closing \)/,
    );
    assert.equal(condition(s, "Ready")?.status, "False");
    assert.equal(await getObject(admin, cmPath(ns, "x")), undefined);
  } finally {
    await ctl.stop();
    admin.close();
  }
});

Deno.test("Controller makes no request at all in a full pass where nothing changed", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const prefix = uniqueName("idle");
  // Every namespace is compared in full in every pass: server defaults and normalization must not look like drift.
  const ctl = await startController(c, {
    watchNamespace: cfgNs,
    reconcileIntervalMs: 300,
    fullCompareIntervalMs: 0,
    optIn: ["secrets"],
  });
  try {
    for (const s of ["a", "b", "c"]) await createNamespace(admin, `${prefix}-${s}`);
    await createSyncConfig(admin, cfgNs, "steady", {
      namespaceSelector: { matchNames: [`${prefix}-.*`] },
      syncItems: [
        { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "one" }, data: { k: "${PROJECT_NAME}" } },
        {
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "svc" },
          spec: { ports: [{ port: 80 }], selector: { app: "x" } },
        },
        // stringData is write-only (stored as data) and `data: {}` is dropped: neither may look like drift.
        { apiVersion: "v1", kind: "Secret", metadata: { name: "creds" }, stringData: { user: "${PROJECT_NAME}" } },
        { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "empty", annotations: {} }, data: {} },
      ],
      deleteItems: [{ apiVersion: "v1", kind: "Secret", name: "gone" }],
    });
    await eventually(
      async () => (await statusOf(admin, cfgNs, "steady")).synchronizedItemCount === 12,
      20_000,
      "converged",
    );
    // Let any write caused by convergence settle, then measure two or more full passes.
    const passesBefore = await counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "interval" });
    await eventually(async () =>
      (await counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "interval" })) >= passesBefore + 3
    );
    const since = auditNow();
    const passesAtStart = await counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "interval" });
    await eventually(
      async () => (await counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "interval" })) >= passesAtStart + 6,
      20_000,
      "two more full passes",
    );
    const requests = await requestsBy(c, ctl.identity, since);
    assert.deepEqual(requests.map((e) => `${e.verb} ${e.requestURI}`), []);
  } finally {
    await ctl.stop();
    admin.close();
  }
});

Deno.test("Passes skip namespaces where nothing changed, and still see what changed in them", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ns = uniqueName("fresh");
  const ctl = await startController(c, { watchNamespace: cfgNs, reconcileIntervalMs: 300 });
  const interval = (result: string) => counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "interval", result });
  try {
    await createNamespace(admin, ns);
    await createSyncConfig(admin, cfgNs, "fresh", {
      namespaceSelector: { matchNames: [ns] },
      syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "one" }, data: { k: "v" } }],
      deleteItems: [{ apiVersion: "v1", kind: "ConfigMap", name: "legacy" }],
    });
    await eventually(async () => (await statusOf(admin, cfgNs, "fresh")).synchronizedItemCount === 1, 20_000);
    // Once a pass has found the namespace in sync, later passes skip it.
    await eventually(async () => (await interval("unchanged")) >= 2, 20_000, "passes to skip the namespace");
    const synced = await interval("success");
    const skipped = await interval("unchanged");
    await eventually(async () => (await interval("unchanged")) >= skipped + 3, 20_000, "three more passes");
    assert.equal(await interval("success"), synced, "no namespace was synced by those passes");

    // An object no event of ours reports (a deleteItems candidate appearing) makes the namespace stale again.
    await admin.request({
      method: "POST",
      path: `/api/v1/namespaces/${ns}/configmaps`,
      body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "legacy" } },
    });
    await eventually(async () => !(await getObject(admin, cmPath(ns, "legacy"))), 20_000, "legacy deleted by a pass");
    // The pass is counted when its unit ends, which may be after the delete is visible here.
    await eventually(async () => (await interval("success")) > synced, 20_000, "a pass to have synced the namespace");
  } finally {
    await ctl.stop();
    admin.close();
  }
});

Deno.test("A restarted controller rebuilds its caches and changes nothing", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const prefix = uniqueName("restart");
  let ctl = await startController(c, { watchNamespace: cfgNs });
  try {
    for (const s of ["a", "b"]) await createNamespace(admin, `${prefix}-${s}`);
    await createSyncConfig(admin, cfgNs, "survivor", {
      namespaceSelector: { matchNames: [`${prefix}-.*`] },
      syncItems: [
        { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "one" }, data: { k: "${PROJECT_NAME}" } },
        {
          apiVersion: "networking.k8s.io/v1",
          kind: "NetworkPolicy",
          metadata: { name: "same-ns" },
          spec: { podSelector: {}, ingress: [{ from: [{ podSelector: {} }] }] },
        },
      ],
    });
    await eventually(async () => (await statusOf(admin, cfgNs, "survivor")).synchronizedItemCount === 4, 20_000);
    await ctl.stop();
    const versions = async () => {
      const out: string[] = [];
      for (const ns of [`${prefix}-a`, `${prefix}-b`]) {
        for (const path of [cmPath(ns, "one"), `/apis/networking.k8s.io/v1/namespaces/${ns}/networkpolicies/same-ns`]) {
          out.push((await getObject(admin, path))?.metadata?.resourceVersion ?? "missing");
        }
      }
      return out;
    };
    const before = await versions();
    const since = auditNow();
    ctl = await startController(c, { watchNamespace: cfgNs });
    // Every targeted namespace is synced once after the start (from the SyncConfig's initial event).
    await eventually(async () => (await counterValue(ctl.metrics, "espejo_syncs_total")) >= 2, 20_000, "syncs");
    const writes = (await requestsBy(c, ctl.identity, since)).filter((e) => !["get", "list"].includes(e.verb));
    // The server adds policyTypes to a NetworkPolicy, which a copy alone cannot tell from a tenant's addition after a
    // restart: one update of one of the copies (a no-op on the server) learns it for the item. Nothing else is sent.
    assert.ok(writes.length <= 1, writes.map((e) => `${e.verb} ${e.requestURI}`).join("\n"));
    for (const e of writes) assert.match(`${e.verb} ${e.requestURI}`, /^update .*\/networkpolicies\/same-ns\?/);
    assert.deepEqual(await versions(), before, "no object changed");
  } finally {
    await ctl.stop();
    admin.close();
  }
});

Deno.test(
  "An item's ownerReferences are never written; the live object's are kept, even 5,000 of them",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const ns = uniqueName("owners");
    const ctl = await startController(c, { watchNamespace: cfgNs });
    try {
      await createNamespace(admin, ns);
      const parent = await admin.request<TestObject>({
        method: "POST",
        path: `/api/v1/namespaces/${ns}/configmaps`,
        body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "parent" } },
      });
      // An owner that does not exist: written, the garbage collector would delete the object again and again.
      const ghost = { apiVersion: "v1", kind: "ConfigMap", name: "ghost", uid: "00000000-0000-4000-8000-000000000000" };
      await createSyncConfig(admin, cfgNs, "owned", {
        namespaceSelector: { matchNames: [ns] },
        syncItems: [{
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: "child", ownerReferences: [ghost] },
          data: { a: "1" },
        }],
      });
      const created = await eventually(() => getObject(admin, cmPath(ns, "child")), 20_000, "child created");
      assert.equal(created.metadata?.ownerReferences, undefined, "the item's ownerReferences are not written");
      const real = { apiVersion: "v1", kind: "ConfigMap", name: "parent", uid: parent.metadata!.uid! };
      // One real owner (the garbage collector keeps an object one of whose owners exists) and 4,999 that are not:
      // about 1 MiB, far more than the cache keeps (MAX_KEPT_REFERENCES), so the restore reads them first.
      const many = [
        real,
        ...Array.from({ length: 4_999 }, (_, i) => ({
          apiVersion: "v1",
          kind: "ConfigMap",
          name: `ghost-${i}-${"g".repeat(100)}`,
          uid: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
        })),
      ];
      assert.ok(JSON.stringify(many).length > MAX_KEPT_REFERENCES * 500);
      for (const [round, live] of [["one owner", [real]], ["5,000 owners", many]] as const) {
        // Someone else makes it a child of real objects and changes the data: espejo restores the data only.
        await admin.request({
          method: "PATCH",
          path: cmPath(ns, "child"),
          contentType: "application/merge-patch+json",
          body: { metadata: { ownerReferences: live }, data: { a: `changed by ${round}` } },
        });
        const restored = await eventually(
          async () => {
            const cm = await getObject(admin, cmPath(ns, "child"));
            return cm?.data?.a === "1" ? cm : undefined;
          },
          30_000,
          `${round}: the data restored`,
        );
        assert.deepEqual(restored.metadata?.ownerReferences, live, `${round}: the live ownerReferences are kept`);
      }
    } finally {
      await ctl.stop();
      admin.close();
    }
  },
);
