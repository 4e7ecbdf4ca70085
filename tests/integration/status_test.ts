/** When statuses are written, and what they keep: against the real API server, under deploy/'s RBAC. */
import assert from "node:assert/strict";
import { clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";
import type { HttpKubeClient } from "../../lib/kube/client.ts";
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
} from "../../testenv/harness.ts";

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

Deno.test(
  "A SyncConfig's status is written within 2 s of its own outcome while every worker is busy",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const burst = Array.from({ length: 4 }, (_, i) => uniqueName(`burst${i}`));
    const quiet = uniqueName("quiet");
    // At the deployed --kube-api-qps (50) the 4 x 300 writes take about 24 s, and each of the 4 workers (as deployed)
    // is inside one namespace's 300-item unit all that time.
    const ctl = await startController(c, { watchNamespace: cfgNs, qps: 50 });
    const since = auditNow();
    try {
      for (const ns of [...burst, quiet]) await createNamespace(admin, ns);
      const items = Array.from({ length: 300 }, (_, i) => cm(`burst-${i}`));
      await createSyncConfig(admin, cfgNs, "big", { namespaceSelector: { matchNames: burst }, syncItems: items });
      // The 4 namespaces are queued together, so the 4 workers take them at once: once the first object exists, every
      // worker is inside a 300-item unit whose writes wait at the rate limiter.
      await eventually(async () => (await managedIn(admin, burst)) > 0, 20_000, "the burst to begin");

      // An Invalid SyncConfig: its outcome is known at once, without a worker.
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
      const invalidMs = performance.now() - started;
      assert.equal(invalid.status, "True");
      assert.ok(invalidMs < 2000, `the Invalid condition took ${invalidMs.toFixed(0)} ms during the burst`);
      const written = await managedIn(admin, burst);
      // A status queued behind the burst's writes would appear only once nearly all of them are written.
      assert.ok(written < 600, `the Invalid status appeared after ${written} of the 1200 writes, not before them`);

      // A valid SyncConfig: its namespace waits for a free worker; once its object is written (its outcome), the
      // status follows within 2 s although the other burst still runs.
      await createSyncConfig(admin, cfgNs, "small", {
        namespaceSelector: { matchNames: [quiet] },
        syncItems: [cm("one")],
      });
      await eventually(() => getObject(admin, `/api/v1/namespaces/${quiet}/configmaps/one`), 60_000, "small's object");
      const outcome = performance.now();
      await eventually(async () => (await statusOf(admin, cfgNs, "small")).synchronizedItemCount === 1, 20_000);
      const smallMs = performance.now() - outcome;
      assert.ok(smallMs < 2000, `small's status came ${smallMs.toFixed(0)} ms after its object`);
      console.log(
        `during a 1200-write burst: Invalid status after ${invalidMs.toFixed(0)} ms (${written} written), ` +
          `a valid SyncConfig's status ${smallMs.toFixed(0)} ms after its object`,
      );

      // The burst's own status: written once, when it is done, with the final count (no intermediate counts).
      await eventually(async () => (await statusOf(admin, cfgNs, "big")).synchronizedItemCount === 1200, 60_000);
      const bigStatusWrites = (await requestsBy(c, ctl.identity, since)).filter((e) =>
        e.verb === "patch" && e.objectRef?.subresource === "status" && e.objectRef?.name === "big"
      );
      assert.equal(bigStatusWrites.length, 1, "one status write for one burst of its own work");
    } finally {
      await ctl.stop();
      admin.close();
    }
  },
);

/** Objects espejo wrote in these namespaces so far. */
async function managedIn(admin: HttpKubeClient, namespaces: string[]): Promise<number> {
  let n = 0;
  for (const ns of namespaces) {
    n += (await admin.request<{ items: unknown[] }>({
      method: "GET",
      path: `/api/v1/namespaces/${ns}/configmaps`,
      query: { labelSelector: "sync.appuio.ch/managed-by=espejo" },
    })).items.length;
  }
  return n;
}

Deno.test("A SyncConfig made Invalid during its own burst shows it within 2 s", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const burst = Array.from({ length: 4 }, (_, i) => uniqueName(`own${i}`));
  const ctl = await startController(c, { watchNamespace: cfgNs, qps: 50 });
  try {
    for (const ns of burst) await createNamespace(admin, ns);
    const items = Array.from({ length: 300 }, (_, i) => cm(`own-${i}`));
    await createSyncConfig(admin, cfgNs, "big", { namespaceSelector: { matchNames: burst }, syncItems: items });
    await eventually(async () => (await managedIn(admin, burst)) > 0, 20_000, "the burst to begin");
    const started = performance.now();
    await admin.request({
      method: "PATCH",
      path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${cfgNs}/syncconfigs/big`,
      contentType: "application/merge-patch+json",
      body: { spec: { namespaceSelector: { matchNames: ["a("] } } },
    });
    // Its namespaces queued for the old generation still run: the Invalid status must not wait for them.
    await eventually(
      async () => condition(await statusOf(admin, cfgNs, "big"), "Invalid")?.status === "True",
      20_000,
      "the Invalid condition",
    );
    const ms = performance.now() - started;
    assert.ok(ms < 2000, `the Invalid condition took ${ms.toFixed(0)} ms during the SyncConfig's own burst`);
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
