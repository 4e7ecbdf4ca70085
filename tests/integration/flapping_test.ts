/**
 * A namespace admin flapping the namespace's label with pruning on (issue 20, case 5), against the real API server:
 * one selection per unit, espejo's own prunes are no one else's deletions (no fight), a status write a second at
 * most, and everything right within one interval after the flapping stops.
 */
import { RELABEL_SETTLE_MS } from "../../lib/sync/prune_decisions.ts";
import assert from "node:assert/strict";
import type { HttpKubeClient } from "../../lib/kube/client.ts";
import { createServiceAccount } from "../../testenv/controlplane.ts";
import { clientFor, eventually, type TestCluster, testCluster, uniqueName } from "../../testenv/shared.ts";
import {
  auditNow,
  counterValue,
  createNamespace,
  getObject,
  requestsBy,
  type RunningController,
  startController,
  statusOf,
} from "../../testenv/harness.ts";
import { startWebhook } from "./webhook.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const SC_API = "/apis/sync.appuio.ch/v1alpha1";
const cmPath = (ns: string, name: string) => `/api/v1/namespaces/${ns}/configmaps/${name}`;
const INTERVAL_MS = 10_000;

function cm(name: string, labels?: Record<string, string>) {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, labels }, data: { v: name } };
}

async function createPruningSyncConfig(admin: HttpKubeClient, namespace: string, name: string, spec: unknown) {
  await admin.request({
    method: "POST",
    path: `${SC_API}/namespaces/${namespace}/syncconfigs`,
    body: {
      apiVersion: "sync.appuio.ch/v1alpha1",
      kind: "SyncConfig",
      metadata: { name, namespace, annotations: { "sync.appuio.ch/prune": "true" } },
      spec,
    },
  });
}

/** A namespace admin of `ns` only: get, patch and update of that one Namespace, nothing else. */
async function namespaceAdmin(c: TestCluster, admin: HttpKubeClient, ns: string): Promise<HttpKubeClient> {
  const role = `${ns}-admin`;
  await admin.request({
    method: "POST",
    path: "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    body: {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: role },
      rules: [{ apiGroups: [""], resources: ["namespaces"], resourceNames: [ns], verbs: ["get", "patch", "update"] }],
    },
  });
  return clientFor(c, await createServiceAccount(admin, uniqueName("nsadmin"), "admin", role));
}

async function setLabel(client: HttpKubeClient, ns: string, key: string, on: boolean): Promise<void> {
  await client.request({
    method: "PATCH",
    path: `/api/v1/namespaces/${ns}`,
    body: { metadata: { labels: { [key]: on ? "on" : null } } },
    contentType: "application/merge-patch+json",
  });
}

async function withController(
  body: (t: { c: TestCluster; admin: HttpKubeClient; cfgNs: string; ctl: RunningController }) => Promise<void>,
): Promise<void> {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const ctl = await startController(c, { watchNamespace: cfgNs, reconcileIntervalMs: INTERVAL_MS });
  try {
    await body({ c, admin, cfgNs, ctl });
  } finally {
    await ctl.stop();
    admin.close();
  }
}

Deno.test("Flapping: a unit that created an object does not prune it when the label goes meanwhile", opts, async () => {
  await withController(async ({ admin, cfgNs, ctl }) => {
    const ns = uniqueName("fo");
    const key = "espejo-test/flap";
    await createNamespace(admin, ns, { [key]: "on" });
    const marker = { "espejo-test/webhook": ns };
    // The create of the unit is held until the label is gone and the controller has seen it go.
    let release!: () => void;
    const released = new Promise<void>((r) => release = r);
    const seen: { op: string; unitsDone: number }[] = [];
    const units = () => counterValue(ctl.metrics, "espejo_syncs_total");
    const webhook = await startWebhook(admin, {
      label: marker,
      operations: ["CREATE", "DELETE"],
      probeNamespace: ns,
      handle: async (req) => {
        if (req.namespace !== ns || !req.userInfo?.username?.includes(":espejo")) return;
        seen.push({ op: req.operation, unitsDone: await units() });
        if (req.operation === "CREATE") await released;
      },
    });
    try {
      await createPruningSyncConfig(admin, cfgNs, "one", {
        namespaceSelector: { labelSelector: { matchLabels: { [key]: "on" } } },
        syncItems: [cm("held", marker)],
      });
      await eventually(() => seen.some((s) => s.op === "CREATE"), 20_000, "espejo's create at the webhook");
      await setLabel(admin, ns, key, false);
      await eventually(
        () => ctl.controller.namespaces.get(ns)?.labels?.[key] === undefined,
        20_000,
        "the controller to see the label go",
      );
      release();
      const del = await eventually(() => seen.find((s) => s.op === "DELETE"), 20_000, "espejo's delete (the prune)");
      const create = seen.find((s) => s.op === "CREATE")!;
      await eventually(async () => (await getObject(admin, cmPath(ns, "held"))) === undefined, 20_000, "it to go");
      assert.ok(
        del.unitsDone > create.unitsDone,
        `the unit that created it (${create.unitsDone} units done then) must not be the one that pruned it ` +
          `(${del.unitsDone} units done then)`,
      );
    } finally {
      release();
      await webhook.stop();
    }
  });
});

Deno.test(
  "Flapping: a namespace admin toggling the label every 100 ms costs a status write a second, no fight, " +
    "and everything is right within one interval after it stops",
  opts,
  async () => {
    await withController(async ({ c, admin, cfgNs, ctl }) => {
      const ns = uniqueName("fl");
      const key = "espejo-test/flap";
      await createNamespace(admin, ns, { [key]: "on" });
      const items = ["a", "b", "c"];
      await createPruningSyncConfig(admin, cfgNs, "flap", {
        namespaceSelector: { labelSelector: { matchLabels: { [key]: "on" } } },
        syncItems: items.map((n) => cm(n)),
      });
      for (const n of items) await eventually(() => getObject(admin, cmPath(ns, n)), 20_000, n);
      await eventually(async () => (await statusOf(admin, cfgNs, "flap")).synchronizedItemCount === 3, 20_000, "3");
      const nsAdmin = await namespaceAdmin(c, admin, ns);
      const since = auditNow();
      const started = Date.now();
      // 120 changes, one every 100 ms at most (the pace of the namespace admin's script), ending with the label on.
      const CHANGES = 120;
      try {
        for (let i = 1; i <= CHANGES; i++) {
          const next = Date.now() + 100;
          await setLabel(nsAdmin, ns, key, i % 2 === 0);
          await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())));
        }
      } finally {
        nsAdmin.close();
      }
      const stopped = Date.now();
      // Every item is there within one interval, and the status says so.
      await eventually(
        async () => {
          for (const n of items) if (!(await getObject(admin, cmPath(ns, n)))) return false;
          return true;
        },
        INTERVAL_MS,
        "every item after the flapping stopped",
      );
      const convergedS = (Date.now() - stopped) / 1000;
      await eventually(
        async () => (await statusOf(admin, cfgNs, "flap")).synchronizedItemCount === 3,
        INTERVAL_MS,
        "the status after the flapping stopped",
      );
      await eventually(
        () => ctl.controller.queue.length() === 0 && ctl.controller.idleForMs === 0,
        INTERVAL_MS,
        "the controller to be idle",
      );
      const seconds = (Date.now() - started) / 1000;
      const reqs = await requestsBy(c, ctl.identity, since);
      const statusPatches = reqs.filter((e) =>
        e.verb === "patch" && e.objectRef?.resource === "syncconfigs" && e.objectRef.subresource === "status" &&
        e.objectRef.name === "flap" && e.objectRef.namespace === cfgNs
      ).length;
      const writes = reqs.filter((e) =>
        e.objectRef?.resource === "configmaps" && e.objectRef.namespace === ns &&
        ["create", "update", "patch", "delete"].includes(e.verb)
      );
      const ok = (e: { responseStatus?: { code?: number } }) =>
        (e.responseStatus?.code ?? 0) < 300;
      const creates = writes.filter((e) => e.verb === "create" && ok(e)).length;
      const deletes = writes.filter((e) => e.verb === "delete" && ok(e)).length;
      const fights = await counterValue(ctl.metrics, "espejo_fight_restores_total");
      console.log(
        `flapping ${seconds.toFixed(1)} s (${CHANGES} label changes): ${statusPatches} status patches, ` +
          `${writes.length} object writes (${creates} creates, ${deletes} deletes), ${fights} fight restores, ` +
          `items back ${convergedS.toFixed(1)} s after it stopped`,
      );
      assert.equal(fights, 0, "espejo's own prunes are no one else's deletions: restoring them is no fight");
      assert.ok(
        statusPatches <= Math.ceil(seconds) + 3,
        `${statusPatches} status patches in ${seconds.toFixed(1)} s: at most one a second`,
      );
      // Prunes wait for the labels to settle (RELABEL_SETTLE_MS): while they flap faster than that, the objects stay
      // and nothing is written; slower toggles cost at most one create and one delete per item per settle time.
      const settles = Math.ceil((seconds * 1000) / RELABEL_SETTLE_MS);
      assert.ok(writes.length <= items.length * 2 * settles, `${writes.length} object writes in ${settles} settles`);
      assert.ok(deletes <= items.length, `${deletes} deletes while the labels flapped faster than they settle`);
      // The label goes for good: everything goes within one interval.
      await setLabel(admin, ns, key, false);
      await eventually(
        async () => {
          for (const n of items) if (await getObject(admin, cmPath(ns, n))) return false;
          return true;
        },
        INTERVAL_MS,
        "every item pruned once the label is gone",
      );
      assert.equal(await counterValue(ctl.metrics, "espejo_fight_restores_total"), 0);
    });
  },
);
