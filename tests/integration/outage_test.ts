/**
 * The API server goes away for 20 s: the controller keeps running, its watches back off instead of hammering the
 * address, and it syncs what happened once the server is back.
 */
import assert from "node:assert/strict";
import { ControlPlane } from "../../testenv/controlplane.ts";
import { installBase, type TestCluster } from "../../testenv/shared.ts";
import { clientFor, eventually } from "../../testenv/shared.ts";
import { counterValue, createNamespace, createSyncConfig, getObject, startController } from "./harness.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test(
  "After a 20 s API server outage every new namespace is synced without a restart; watches back off meanwhile",
  opts,
  async () => {
    // A control plane of its own: stopping the shared one would break the tests running beside this one.
    const cp = await ControlPlane.start({ audit: true, log: () => {} });
    const c: TestCluster = { server: cp.server, caPem: cp.caPem, admin: cp.admin, auditLogPath: cp.auditLogPath };
    await installBase(cp.client());
    const admin = clientFor(c);
    const ctl = await startController(c, { watchNamespace: "outage-cfg", reconcileIntervalMs: 1_000 });
    try {
      await createNamespace(admin, "before");
      await createSyncConfig(admin, "outage-cfg", "survive", {
        namespaceSelector: { matchNames: ["before", "after-.*"] },
        syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "kept" }, data: { a: "1" } }],
      });
      await eventually(() => getObject(admin, "/api/v1/namespaces/before/configmaps/kept"), 20_000, "first sync");

      const failed = async () =>
        (await counterValue(ctl.metrics, "espejo_api_requests_total", { verb: "WATCH", code: "0" })) +
        (await counterValue(ctl.metrics, "espejo_api_requests_total", { verb: "LIST", code: "0" }));
      const failedBefore = await failed();
      await cp.stopApiServer();
      // The outage itself is the scenario: twenty seconds without an API server (watches fail, passes cannot write).
      await new Promise((r) => setTimeout(r, 20_000));
      assert.ok(ctl.controller.ready, "the caches stay usable while the API server is away");
      // Three caches (namespaces, SyncConfigs, ConfigMaps) retrying with backoff from 0.8 s doubling (+-20%) try at
      // most about six times each in 20 s; without backoff it was about forty each.
      const attempts = (await failed()) - failedBefore;
      assert.ok(attempts > 0, "the watches did try to reconnect");
      assert.ok(attempts <= 3 * 7, `${attempts} failed list/watch requests in 20 s`);
      await cp.startApiServer();

      for (const s of ["a", "b", "c"]) await createNamespace(admin, `after-${s}`);
      await admin.request({ method: "DELETE", path: "/api/v1/namespaces/before/configmaps/kept" });
      for (const ns of ["after-a", "after-b", "after-c", "before"]) {
        await eventually(() => getObject(admin, `/api/v1/namespaces/${ns}/configmaps/kept`), 60_000, `sync of ${ns}`);
      }
    } finally {
      await ctl.stop();
      admin.close();
      await cp.stop();
    }
  },
);
