/**
 * Two SyncConfigs that contradict each other in one namespace (one's deleteItem names the object another's syncItem
 * syncs), against the real API server: decided once, not raced. Nothing is written for the contested object, both
 * statuses and an Event on each name the other, and no fight is counted.
 */
import assert from "node:assert/strict";
import { clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";
import {
  auditNow,
  counterValue,
  createNamespace,
  createSyncConfig,
  eventsOf,
  getObject,
  requestsBy,
  startController,
  statusOf,
} from "../../testenv/harness.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const cmPath = (ns: string, name: string) => `/api/v1/namespaces/${ns}/configmaps/${name}`;
const cm = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: { v: name } });

Deno.test(
  "A deleteItem and another SyncConfig's syncItem naming one object: no churn, both report it",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("cfg");
    const prefix = uniqueName("contra");
    const namespaces = [`${prefix}-a`, `${prefix}-b`];
    const ctl = await startController(c, { watchNamespace: cfgNs, reconcileIntervalMs: 500 });
    try {
      for (const ns of namespaces) {
        await createNamespace(admin, ns);
        await admin.request({ method: "POST", path: `/api/v1/namespaces/${ns}/configmaps`, body: cm("legacy") });
      }
      const selector = { matchNames: [`${prefix}-.*`] };
      await createSyncConfig(admin, cfgNs, "sync", {
        namespaceSelector: selector,
        syncItems: [cm("mine"), cm("shared")],
      });
      const before = new Map<string, string | undefined>();
      for (const ns of namespaces) {
        const shared = await eventually(() => getObject(admin, cmPath(ns, "shared")), 20_000, `shared in ${ns}`);
        before.set(ns, shared.metadata?.uid);
      }
      const since = auditNow();
      await createSyncConfig(admin, cfgNs, "deny", {
        namespaceSelector: selector,
        deleteItems: [
          { apiVersion: "v1", kind: "ConfigMap", name: "legacy" },
          { apiVersion: "v1", kind: "ConfigMap", name: "shared" },
        ],
      });

      // Both statuses say so, each naming the other SyncConfig and the object, in every namespace.
      const conflict = (field: string, other: string, verb: string) =>
        new RegExp(
          `${field.replaceAll(/[[\].]/g, "\\$&")} \\(ConfigMap shared\\) in namespace ${prefix}-[ab]: contradicts ` +
            `${other.replaceAll(/[[\].]/g, "\\$&")} of SyncConfig ${cfgNs}/\\w+, which ${verb} the same object`,
        );
      const deny = await eventually(
        async () => {
          const s = await statusOf(admin, cfgNs, "deny");
          return s.failedItemCount === 2 ? s : undefined;
        },
        20_000,
        "the deleting SyncConfig's status: 2 failed",
      );
      const denyReady = deny.conditions?.find((x) => x.type === "Ready");
      assert.match(denyReady?.message ?? "", conflict(".spec.deleteItems[1]", ".spec.syncItems[1]", "syncs"));
      const sync = await eventually(
        async () => {
          const s = await statusOf(admin, cfgNs, "sync");
          return s.failedItemCount === 2 && s.synchronizedItemCount === 2 ? s : undefined;
        },
        20_000,
        "the syncing SyncConfig's status: 2 synchronized, 2 failed",
      );
      const syncReady = sync.conditions?.find((x) => x.type === "Ready");
      assert.match(syncReady?.message ?? "", conflict(".spec.syncItems[1]", ".spec.deleteItems[1]", "deletes"));

      // An Event on each.
      for (const [name, other] of [["deny", "sync"], ["sync", "deny"]]) {
        const warning = await eventually(
          async () => (await eventsOf(admin, cfgNs, name)).find((e) => e.reason === "SyncFailed"),
          20_000,
          `a SyncFailed Event on ${name}`,
        );
        assert.equal(warning.type, "Warning");
        assert.match(
          warning.message,
          new RegExp(`\\(ConfigMap shared\\): contradicts .* SyncConfig ${cfgNs}/${other},`),
        );
      }

      // Passes go on (every 500 ms): nothing is written for the contested object, and no fight is seen.
      const passes = await counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "interval" });
      await eventually(
        async () => (await counterValue(ctl.metrics, "espejo_syncs_total", { trigger: "interval" })) >= passes + 10,
        30_000,
        "five more passes",
      );
      const writes = (await requestsBy(c, ctl.identity, since)).filter((e) =>
        e.objectRef?.resource === "configmaps" && e.verb !== "get" && e.verb !== "list"
      ).map((e) => `${e.verb} ${e.objectRef?.namespace}/${e.objectRef?.name}`).sort();
      assert.deepEqual(writes, namespaces.map((ns) => `delete ${ns}/legacy`), "only the uncontested deletes");
      for (const ns of namespaces) {
        const shared = await getObject(admin, cmPath(ns, "shared"));
        assert.equal(shared?.metadata?.uid, before.get(ns), `shared in ${ns} is the object created before`);
      }
      assert.equal(await counterValue(ctl.metrics, "espejo_fight_restores_total"), 0, "no fight");
    } finally {
      await ctl.stop();
      admin.close();
    }
  },
);
