/**
 * Prune deletes that take long (a slow validating admission webhook, issue 20 case 6), against the real API server:
 * one unit's deletes overlap instead of running one at a time, and other namespaces' units go on meanwhile.
 */
import assert from "node:assert/strict";
import { clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";
import { auditNow, createNamespace, getObject, requestsBy, startController } from "../../testenv/harness.ts";
import { startWebhook } from "./webhook.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const cmPath = (ns: string, name: string) => `/api/v1/namespaces/${ns}/configmaps/${name}`;
/** Below the webhook's timeoutSeconds (30): a delete held this long is allowed anyway. */
const MAX_HOLD_MS = 25_000;

Deno.test("Pruning: deletes held by a slow webhook overlap, and other namespaces sync meanwhile", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ctl = await startController(c, { watchNamespace: cfgNs });
  const [slow, other] = [uniqueName("ps"), uniqueName("po")];
  const key = "espejo-test/slow-prune";
  const marker = { "espejo-test/webhook": slow };
  const names = Array.from({ length: 12 }, (_, i) => `s${i}`);
  let release!: () => void;
  const released = new Promise<void>((r) => release = r);
  let inFlight = 0;
  let maxInFlight = 0;
  let firstAt = 0;
  let lastDoneAt = 0;
  let webhook: { stop(): Promise<void> } | undefined;
  try {
    await createNamespace(admin, slow, { [key]: slow });
    await admin.request({
      method: "POST",
      path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${cfgNs}/syncconfigs`,
      body: {
        apiVersion: "sync.appuio.ch/v1alpha1",
        kind: "SyncConfig",
        metadata: { name: "many", namespace: cfgNs, annotations: { "sync.appuio.ch/prune": "true" } },
        spec: {
          namespaceSelector: { labelSelector: { matchLabels: { [key]: slow } } },
          syncItems: names.map((n) => ({
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: n, labels: marker },
            data: { v: n },
          })),
        },
      },
    });
    for (const n of names) await eventually(() => getObject(admin, cmPath(slow, n)), 20_000, n);
    // Every delete of espejo's in `slow` is held until the test has seen what it waits for.
    webhook = await startWebhook(admin, {
      label: marker,
      operations: ["DELETE"],
      probeNamespace: slow,
      handle: async (req) => {
        if (req.namespace !== slow || !req.userInfo?.username?.includes(":espejo")) return;
        firstAt ||= Date.now();
        maxInFlight = Math.max(maxInFlight, ++inFlight);
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([released, new Promise((r) => timer = setTimeout(r, MAX_HOLD_MS))]);
        clearTimeout(timer);
        inFlight--;
        lastDoneAt = Date.now();
      },
    });
    await admin.request({
      method: "PATCH",
      path: `/api/v1/namespaces/${slow}`,
      body: { metadata: { labels: { [key]: null } } },
      contentType: "application/merge-patch+json",
    });
    await eventually(() => inFlight >= 2, 20_000, "a second prune delete while the first is held");
    // A new namespace's unit runs while the prunes of `slow` are held.
    await createNamespace(admin, other, { [key]: slow });
    for (const n of names) await eventually(() => getObject(admin, cmPath(other, n)), 20_000, `${n} in ${other}`);
    assert.ok(inFlight > 0, "the other namespace was synced while the prune deletes were still held");
    release();
    for (const n of names) {
      await eventually(async () => (await getObject(admin, cmPath(slow, n))) === undefined, 20_000, `${n} pruned`);
    }
    console.log(
      `12 prunes behind a held webhook: at most ${maxInFlight} at once, ${
        ((lastDoneAt - firstAt) / 1000).toFixed(1)
      } s from the first delete to the last`,
    );
    assert.ok(maxInFlight > 1);
  } finally {
    release();
    await webhook?.stop();
    await ctl.stop();
    admin.close();
  }
});

Deno.test("Pruning: a delete held by a finalizer holds no worker and is not sent again and again", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ctl = await startController(c, { watchNamespace: cfgNs });
  const ns = uniqueName("pf");
  const key = "espejo-test/finalized-prune";
  const path = cmPath(ns, "held");
  try {
    await createNamespace(admin, ns, { [key]: ns });
    await admin.request({
      method: "POST",
      path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${cfgNs}/syncconfigs`,
      body: {
        apiVersion: "sync.appuio.ch/v1alpha1",
        kind: "SyncConfig",
        metadata: { name: "f", namespace: cfgNs, annotations: { "sync.appuio.ch/prune": "true" } },
        spec: {
          namespaceSelector: { labelSelector: { matchLabels: { [key]: ns } } },
          // The item's own finalizer (what a tenant adds espejo restores away): it holds the prune's delete.
          syncItems: [{
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: "held", finalizers: ["espejo-test.example.com/hold"] },
            data: { v: "1" },
          }],
        },
      },
    });
    await eventually(() => getObject(admin, path), 20_000, "the object");
    const merge = "application/merge-patch+json";
    const since = auditNow();
    await admin.request({
      method: "PATCH",
      path: `/api/v1/namespaces/${ns}`,
      body: { metadata: { labels: { [key]: null } } },
      contentType: merge,
    });
    await eventually(async () => (await getObject(admin, path))?.metadata?.deletionTimestamp, 20_000, "the prune");
    // The unit ended although the object is still there: nothing waits for it to go.
    await eventually(
      () => ctl.controller.queue.length() === 0 && ctl.controller.idleForMs === 0,
      20_000,
      "the controller to be idle",
    );
    assert.ok(await getObject(admin, path), "the finalizer still holds it");
    const deletes = (await requestsBy(c, ctl.identity, since)).filter((e) =>
      e.verb === "delete" && e.objectRef?.resource === "configmaps" && e.objectRef.namespace === ns
    );
    assert.ok(deletes.length >= 1 && deletes.length <= 2, `${deletes.length} deletes of the held object`);
    await admin.request({ method: "PATCH", path, body: { metadata: { finalizers: null } }, contentType: merge });
    await eventually(async () => (await getObject(admin, path)) === undefined, 20_000, "it to go");
  } finally {
    await ctl.stop();
    admin.close();
  }
});
