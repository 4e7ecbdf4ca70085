/** The API server goes away for 10 s: the controller keeps running and syncs what happened once it is back. */
import assert from "node:assert/strict";
import { ControlPlane } from "../testenv/controlplane.ts";
import { installBase, type TestCluster } from "../testenv/shared.ts";
import { clientFor, eventually } from "../testenv/shared.ts";
import { createNamespace, createSyncConfig, getObject, startController } from "./harness.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test(
  "After a 10 s API server outage every new namespace is synced, without restarting the controller",
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

      await cp.stopApiServer();
      // The outage itself is the scenario: ten seconds without an API server (watches fail, passes cannot write).
      await new Promise((r) => setTimeout(r, 10_000));
      assert.ok(ctl.controller.ready, "the caches stay usable while the API server is away");
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
