/**
 * `deno run -A bench/invalid_item.ts [--namespaces 100] [--minutes 10]`: what a permanently invalid item costs.
 * One SyncConfig over N namespaces with one good ConfigMap and one Service the API server always refuses (port
 * 99999); the controller runs in-process with a 10 s reconcile interval. Prints the requests of the controller's
 * identity (watches excluded) in each minute after the SyncConfig is created, and their total. Reports; never fails.
 */
import { parseArgs } from "node:util";
import { auditNow, createNamespace, createSyncConfig, requestsBy, startController } from "../testenv/harness.ts";
import { clientFor, testCluster, uniqueName } from "../testenv/shared.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { namespaces: { type: "string", default: "100" }, minutes: { type: "string", default: "10" } },
});
const n = Number(values.namespaces);
const minutes = Number(values.minutes);

const c = await testCluster();
const admin = clientFor(c);
const cfgNs = uniqueName("cfg");
const prefix = uniqueName("invalid");
for (let i = 0; i < n; i++) await createNamespace(admin, `${prefix}-${i}`);
const ctl = await startController(c, { watchNamespace: cfgNs, reconcileIntervalMs: 10_000 });
const since = auditNow();
const started = Date.now();
await createSyncConfig(admin, cfgNs, "invalid", {
  namespaceSelector: { matchNames: [`${prefix}-.*`] },
  syncItems: [
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "fine" }, data: { a: "1" } },
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "bad" },
      spec: { ports: [{ port: 99999 }], selector: { app: "x" } },
    },
  ],
});
const perMinute: number[] = [];
for (let m = 1; m <= minutes; m++) {
  await new Promise((r) => setTimeout(r, Math.max(0, started + m * 60_000 - Date.now())));
  const all = await requestsBy(c, ctl.identity, since);
  const total = all.filter((e) => e.objectRef?.resource !== "events" && e.objectRef?.resource !== "syncconfigs").length;
  perMinute.push(total - perMinute.reduce((a, b) => a + b, 0));
  console.error(`minute ${m}: ${perMinute.at(-1)} requests`);
}
const services = (await requestsBy(c, ctl.identity, since)).filter((e) => e.objectRef?.resource === "services");
console.log(JSON.stringify({ namespaces: n, minutes, perMinute, serviceRequests: services.length }));
await ctl.stop();
admin.close();
await c.own?.stop();
Deno.exit(0);
