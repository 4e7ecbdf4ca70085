/**
 * Memory bounded by what espejo manages, never by what others write: the controller, run as it ships (deno.permissions,
 * deno.v8-flags, the image's allocator settings) inside the Go espejo's limits (a cgroup of 100M memory and 30 % of a
 * CPU), starts and restarts beside objects that tenants wrote — large labelled ConfigMaps no item names, and
 * unlabelled ConfigMaps with large annotations while a deleteItem of kind ConfigMap has the metadata of every
 * ConfigMap cached — without being killed by the memory limit, and still syncs. The cgroup's peaks are printed.
 *
 * `deno task test:memory` runs the same cases with ten times the objects (ESPEJO_MEMORY_SCALE=10: 360 MB of
 * labelled ConfigMaps in etcd), too long for every test run.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Cgroup } from "../../testenv/cgroup.ts";
import { freePorts, kubeconfigYaml } from "../../testenv/controlplane.ts";
import { espejoIdentity } from "../../testenv/espejo_rbac.ts";
import { ControllerProcess } from "../../testenv/controller_process.ts";
import { clientFor, eventually, type TestCluster, testCluster, uniqueName } from "../../testenv/shared.ts";
import type { HttpKubeClient } from "../../lib/kube/client.ts";
import {
  auditNow,
  createNamespace,
  createSyncConfig,
  getObject,
  requestsBy,
  type RunningController,
  startController,
} from "../../testenv/harness.ts";
import { MANAGED_LABEL, MANAGED_LABEL_VALUE } from "../../lib/model/markers.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const SCALE = Number(Deno.env.get("ESPEJO_MEMORY_SCALE") ?? "1");
const MEMORY_LIMIT = 100 * 1024 * 1024;
const CPU_QUOTA = 0.3;
const MiB = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

/** Runs `fn` on every element, `width` at a time. */
async function pool<T>(items: T[], width: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

interface Case {
  name: string;
  count: number;
  /** The ConfigMap a tenant wrote, number `i`. */
  object: (i: number) => Record<string, unknown>;
  /** The SyncConfig has a deleteItem of kind ConfigMap (the metadata of every ConfigMap is cached). */
  deleteItem: boolean;
}

const KiB = 1024;
const CASES: Case[] = [
  {
    name: `${40 * SCALE} labelled ConfigMaps of 900 KiB that no item names`,
    count: 40 * SCALE,
    object: (i) => ({
      metadata: { name: `big-${i}`, labels: { [MANAGED_LABEL]: MANAGED_LABEL_VALUE } },
      data: { padding: "x".repeat(900 * KiB) },
    }),
    deleteItem: false,
  },
  {
    name: `${100 * SCALE} unlabelled ConfigMaps with 240 KB of annotations, and a deleteItem of kind ConfigMap`,
    count: 100 * SCALE,
    object: (i) => ({ metadata: { name: `annotated-${i}`, annotations: { padding: "y".repeat(240_000) } } }),
    deleteItem: true,
  },
];

async function deleteNamespaces(admin: HttpKubeClient, names: string[]): Promise<void> {
  for (const n of names) await admin.request({ method: "DELETE", path: `/api/v1/namespaces/${n}` }).catch(() => {});
}

async function runCase(c: TestCluster, admin: HttpKubeClient, t: Case): Promise<void> {
  const tenant = uniqueName("mem-tenant");
  const cfgNs = uniqueName("mem-cfg");
  const targets = [uniqueName("mem-target"), uniqueName("mem-target")];
  const dir = await Deno.makeTempDir({ prefix: "espejo-memory-" });
  const cgroup = await Cgroup.create(`espejo-memtest-${crypto.randomUUID().slice(0, 8)}`, MEMORY_LIMIT, CPU_QUOTA);
  let ctl: ControllerProcess | undefined;
  try {
    await createNamespace(admin, tenant);
    await pool(
      Array.from({ length: t.count }, (_, i) => i),
      8,
      (i) => admin.request({ method: "POST", path: `/api/v1/namespaces/${tenant}/configmaps`, body: t.object(i) }),
    );
    for (const n of targets) await createNamespace(admin, n);
    const identity = await espejoIdentity(admin, cfgNs);
    const kubeconfig = join(dir, "kubeconfig");
    await Deno.writeTextFile(kubeconfig, kubeconfigYaml(c.server, c.caPem, identity));
    const spec = (matchNames: string[]) => ({
      namespaceSelector: { matchNames },
      syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "normal" }, data: { a: "b" } }],
      ...(t.deleteItem ? { deleteItems: [{ apiVersion: "v1", kind: "ConfigMap", name: "to-delete" }] } : {}),
    });
    await createSyncConfig(admin, cfgNs, "memory", spec([targets[0]]));
    const [healthPort] = await freePorts(1);
    ctl = new ControllerProcess(cgroup, kubeconfig, healthPort, join(dir, "controller.log"), cfgNs);

    await ctl.start();
    const synced = (target: string) => async () => {
      await ctl!.alive();
      return await getObject(admin, `/api/v1/namespaces/${target}/configmaps/normal`);
    };
    await eventually(synced(targets[0]), 60_000, "synced");
    const firstPeak = await cgroup.peakBytes();

    // The restart: every cache fills again beside the tenant's objects.
    assert.equal((await ctl.stop())?.code, 0, "a clean exit on SIGTERM");
    await cgroup.resetPeak();
    await ctl.start();
    await admin.request({
      method: "PATCH",
      path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${cfgNs}/syncconfigs/memory`,
      contentType: "application/merge-patch+json",
      body: { spec: spec(targets) },
    });
    await eventually(synced(targets[1]), 60_000, "synced after the restart");
    const restartPeak = await cgroup.peakBytes();
    assert.equal(await cgroup.oomKills(), 0, `no kill by the memory limit; log: ${await ctl.logTail()}`);
    assert.ok(ctl.running(), `the controller still runs; log: ${await ctl.logTail()}`);
    console.log(
      `memory: ${t.name}: cgroup peak ${MiB(firstPeak)} MiB at the first start, ${MiB(restartPeak)} MiB ` +
        `at the restart (limit ${MiB(MEMORY_LIMIT)} MiB, ${CPU_QUOTA * 100} % CPU)`,
    );
  } finally {
    const kills = await cgroup.oomKills();
    if (kills) {
      console.log(`memory: ${t.name}: ${kills} kills by the memory limit, peak ${MiB(await cgroup.peakBytes())} MiB`);
    }
    await ctl?.stop();
    await cgroup.remove();
    await deleteNamespaces(admin, [tenant, cfgNs, ...targets]);
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

for (const t of CASES) {
  Deno.test(`Inside 100M/30 %, the controller starts, restarts and syncs beside ${t.name}`, opts, async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    try {
      await runCase(c, admin, t);
    } finally {
      admin.close();
    }
  });
}

Deno.test(
  "Caches fill from WatchLists; a synced object a tenant makes large is read once to be judged, restored, not kept",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("mem-large");
    const target = uniqueName("mem-large-target");
    await createNamespace(admin, target);
    const path = `/api/v1/namespaces/${target}/configmaps/restored`;
    let ctl: RunningController | undefined;
    try {
      const started = auditNow();
      ctl = await startController(c, { watchNamespace: cfgNs });
      await createSyncConfig(admin, cfgNs, "large", {
        namespaceSelector: { matchNames: [target] },
        syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "restored" }, data: { a: "b" } }],
      });
      await eventually(() => getObject(admin, path), 20_000, "synced");
      // Every cache filled from a WatchList (the test API server serves them): not one list request.
      const lists = (await requestsBy(c, ctl.identity, started)).filter((e) => e.verb === "list");
      assert.deepEqual(lists.map((e) => e.requestURI), [], "no list");
      const since = auditNow();
      await admin.request({
        method: "PATCH",
        path,
        contentType: "application/merge-patch+json",
        body: { data: { padding: "x".repeat(900 * KiB) } },
      });
      await eventually(async () => (await getObject(admin, path))?.data?.padding === undefined, 30_000, "the restore");
      await eventually(() => ctl!.controller.retainedContentBytes() === 0, 10_000, "no content retained");
      const reads = (await requestsBy(c, ctl.identity, since)).filter((e) =>
        e.verb === "get" && e.objectRef?.resource === "configmaps" && e.objectRef?.name === "restored"
      );
      assert.equal(reads.length, 1, "the large version was read once, to be judged");
    } finally {
      await ctl?.stop();
      await deleteNamespaces(admin, [cfgNs, target]);
      admin.close();
    }
  },
);
