/** When statuses are written, and what they keep: against the real API server, under deploy/'s RBAC. */
import assert from "node:assert/strict";
import { clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";
import {
  condition,
  counterValue,
  createNamespace,
  createSyncConfig,
  getObject,
  startController,
  statusOf,
} from "./harness.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const cm = (name: string, labels: Record<string, string> = {}) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, labels },
  data: { k: "v" },
});

Deno.test("A deletion stays counted: the echo of espejo's own writes causes no sync", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ns = uniqueName("del");
  const other = uniqueName("other");
  const ctl = await startController(c, { watchNamespace: cfgNs });
  try {
    await createNamespace(admin, ns);
    await createNamespace(admin, other);
    await admin.request({ method: "POST", path: `/api/v1/namespaces/${ns}/configmaps`, body: cm("legacy") });
    await createSyncConfig(admin, cfgNs, "sentinel", {
      namespaceSelector: { matchNames: [other] },
      syncItems: [cm("marker")],
    });
    await eventually(
      async () => (await statusOf(admin, cfgNs, "sentinel")).synchronizedItemCount === 1,
      20_000,
      "the sentinel",
    );
    await createSyncConfig(admin, cfgNs, "cleanup", {
      namespaceSelector: { matchNames: [ns] },
      syncItems: [cm("info"), cm("more")],
      deleteItems: [{ apiVersion: "v1", kind: "ConfigMap", name: "legacy" }],
    });
    await eventually(
      async () => {
        const s = await statusOf(admin, cfgNs, "cleanup");
        return s.synchronizedItemCount === 2 && s.deletedItemCount === 1;
      },
      20_000,
      "status counting 2 synchronized and 1 deleted",
    );
    // A change to another SyncConfig's object in another namespace: its event comes after the echoes of the creates
    // above on the same watch, so once its unit has run, every echo has been seen.
    await admin.request({
      method: "PATCH",
      path: `/api/v1/namespaces/${other}/configmaps/marker`,
      contentType: "application/merge-patch+json",
      body: { data: { k: "changed" } },
    });
    await eventually(
      async () => (await counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "namespace" })) >= 1,
      20_000,
      "the unit of the marker's namespace",
    );
    assert.equal(
      await counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "namespace" }),
      1,
      "only the marker's namespace was synced by an event; the echoes of espejo's creates caused none",
    );
    assert.equal((await statusOf(admin, cfgNs, "cleanup")).deletedItemCount, 1);
  } finally {
    await ctl.stop();
    admin.close();
  }
});

Deno.test("A SyncConfig's status is written when its own work is done, whatever else is running", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ns = uniqueName("burst");
  // At the deployed --kube-api-qps (50) the 300 writes take about 6 s, queued at the rate limiter: the status of
  // another SyncConfig must not queue behind them.
  const ctl = await startController(c, { watchNamespace: cfgNs, qps: 50 });
  try {
    await createNamespace(admin, ns);
    const items = Array.from({ length: 300 }, (_, i) => cm(`burst-${i}`));
    await createSyncConfig(admin, cfgNs, "big", { namespaceSelector: { matchNames: [ns] }, syncItems: items });
    // The burst is under way once its first object exists.
    await eventually(() => getObject(admin, `/api/v1/namespaces/${ns}/configmaps/burst-0`), 20_000, "burst begun");
    const started = performance.now();
    await createSyncConfig(admin, cfgNs, "broken", {
      namespaceSelector: { matchNames: ["a("] },
      syncItems: [cm("x")],
    });
    const invalid = await eventually(
      async () => condition(await statusOf(admin, cfgNs, "broken"), "Invalid"),
      20_000,
      "the Invalid condition of the broken SyncConfig",
    );
    const latencyMs = performance.now() - started;
    const written = (await admin.request<{ items: unknown[] }>({
      method: "GET",
      path: `/api/v1/namespaces/${ns}/configmaps`,
      query: { labelSelector: "sync.appuio.ch/managed-by=espejo" },
    })).items.length;
    assert.equal(invalid.status, "True");
    // All 300 writes wait at the rate limiter from the start of the burst: a status queued behind them would appear
    // only once nearly all of them are written.
    assert.ok(written < 250, `the Invalid status appeared after ${written} of the 300 writes, not before them`);
    console.log(
      `status of an Invalid SyncConfig during a 300-item burst: ${latencyMs.toFixed(0)} ms (${written} written)`,
    );
    // The burst's own status is written once it is done, with the final count.
    await eventually(async () => (await statusOf(admin, cfgNs, "big")).synchronizedItemCount === 300, 60_000);
  } finally {
    await ctl.stop();
    admin.close();
  }
});

Deno.test("Conditions of types espejo does not own are kept in the status", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ns = uniqueName("cond");
  const ctl = await startController(c, { watchNamespace: cfgNs });
  try {
    await createNamespace(admin, ns);
    await createSyncConfig(admin, cfgNs, "shared", { namespaceSelector: { matchNames: [ns] }, syncItems: [cm("a")] });
    await eventually(async () => (await statusOf(admin, cfgNs, "shared")).synchronizedItemCount === 1, 20_000);
    const current = await statusOf(admin, cfgNs, "shared");
    const theirs = {
      type: "Audited",
      status: "True",
      reason: "PolicyChecked",
      message: "checked by a policy engine",
      lastTransitionTime: "2024-01-01T00:00:00Z",
    };
    await admin.request({
      method: "PATCH",
      path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${cfgNs}/syncconfigs/shared/status`,
      contentType: "application/merge-patch+json",
      body: { status: { conditions: [...(current.conditions ?? []), theirs] } },
    });
    // espejo writes the status again (a second item changes the count): the foreign condition must survive.
    await admin.request({
      method: "PATCH",
      path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${cfgNs}/syncconfigs/shared`,
      contentType: "application/merge-patch+json",
      body: { spec: { syncItems: [cm("a"), cm("b")] } },
    });
    const s = await eventually(
      async () => {
        const s = await statusOf(admin, cfgNs, "shared");
        return s.synchronizedItemCount === 2 ? s : undefined;
      },
      20_000,
      "the status for two items",
    );
    assert.deepEqual(condition(s, "Audited"), theirs);
    assert.equal(condition(s, "Ready")?.status, "True");
  } finally {
    await ctl.stop();
    admin.close();
  }
});
