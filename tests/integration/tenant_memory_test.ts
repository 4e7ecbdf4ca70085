/**
 * Memory bounded per object and per namespace whatever a tenant writes (docs/threat-model.md): the controller, run as
 * it ships inside the Go espejo's limits (a cgroup of 100M memory and 30 % of a CPU), beside 40 synced objects on
 * which a tenant put about 1 MiB of ownerReferences each (and changed their data, so that every one is restored),
 * and 60 selected namespaces carrying about 1 MiB of labels each (as a namespace admin may write). It restores and
 * syncs them all, restarts, and syncs a SyncConfig that reads a label key no SyncConfig read before (the trimmed
 * namespaces are read again), without being killed by the memory limit; the anonymous peaks are printed and held
 * under 64 MiB.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Cgroup } from "../../testenv/cgroup.ts";
import { ControllerProcess } from "../../testenv/controller_process.ts";
import { freePorts, kubeconfigYaml } from "../../testenv/controlplane.ts";
import { espejoIdentity } from "../../testenv/espejo_rbac.ts";
import { MemorySampler } from "../../testenv/memory_sampler.ts";
import { clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";
import { createNamespace, createSyncConfig, getObject } from "../../testenv/harness.ts";
import { createTenant } from "../../testenv/tenant.ts";
import type { HttpKubeClient } from "../../lib/kube/client.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const MEMORY_LIMIT = 100 * 1024 * 1024;
const CPU_QUOTA = 0.3;
/** The goal for the anonymous peak, at the first start and at the restart. */
const ANON_GOAL_KIB = 64 * 1024;
const OBJECTS_PER_NAMESPACE = 20;
const LABELLED_NAMESPACES = 60;

/** About 1 MiB of ownerReferences: one owner that exists (the garbage collector keeps the object) and 4,999 others. */
function references(owner: { name: string; uid: string }, tag: string) {
  return [
    { apiVersion: "v1", kind: "ConfigMap", name: owner.name, uid: owner.uid },
    ...Array.from({ length: 4_999 }, (_, i) => ({
      apiVersion: "v1",
      kind: "ConfigMap",
      name: `ghost-${tag}-${i}-${"g".repeat(100)}`,
      uid: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
    })),
  ];
}

/** About 1 MiB of labels: 10,000 keys of 63 characters with values of 40, beside `selected`. */
function hugeLabels(selected: Record<string, string>): Record<string, string> {
  const labels: Record<string, string> = { ...selected };
  for (let i = 0; i < 10_000; i++) labels[`k${i}`.padEnd(63, "k")] = "v".repeat(40);
  return labels;
}

/** Runs `fn` on every element, `width` at a time. */
async function pool<T>(items: T[], width: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

const cmPath = (ns: string, name: string) => `/api/v1/namespaces/${ns}/configmaps/${name}`;

Deno.test(
  "Inside 100M/30 %, 40 synced objects with 1 MiB of ownerReferences and 60 namespaces with 1 MiB of labels cost " +
    "bounded memory, restart included",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const id = uniqueName("tm").replace(/^tm-/, "");
    const cfgNs = uniqueName("tm-cfg");
    const tenantNs = [uniqueName("tm-tenant"), uniqueName("tm-tenant")];
    const labelled = Array.from({ length: LABELLED_NAMESPACES }, (_, i) => `tm-${id}-labelled-${i}`);
    const dir = await Deno.makeTempDir({ prefix: "espejo-tenant-memory-" });
    const cgroup = await Cgroup.create(`espejo-tenantmem-${crypto.randomUUID().slice(0, 8)}`, MEMORY_LIMIT, CPU_QUOTA);
    const sampler = new MemorySampler();
    let ctl: ControllerProcess | undefined;
    try {
      await createNamespace(admin, cfgNs);
      for (const ns of tenantNs) await createNamespace(admin, ns);
      const tenant = await createTenant(c, admin, tenantNs[0], { alsoIn: [tenantNs[1]] });
      // Namespace admins label their namespaces; the team label selects them, the rest is theirs.
      await pool(labelled, 4, (name) =>
        admin.request({
          method: "POST",
          path: "/api/v1/namespaces",
          body: {
            apiVersion: "v1",
            kind: "Namespace",
            metadata: {
              name,
              labels: hugeLabels({ [`espejo-test/team-${id}`]: "a", [`espejo-test/tier-${id}`]: "x" }),
            },
          },
        }));
      const identity = await espejoIdentity(admin, cfgNs);
      const kubeconfig = join(dir, "kubeconfig");
      await Deno.writeTextFile(kubeconfig, kubeconfigYaml(c.server, c.caPem, identity));
      const items = (prefix: string, n: number) =>
        Array.from({ length: n }, (_, i) => ({
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: `${prefix}-${i}` },
          data: { a: "espejo" },
        }));
      await createSyncConfig(admin, cfgNs, "owned", {
        namespaceSelector: { matchNames: tenantNs },
        syncItems: items("owned", OBJECTS_PER_NAMESPACE),
      });
      await createSyncConfig(admin, cfgNs, "labelled", {
        namespaceSelector: { labelSelector: { matchLabels: { [`espejo-test/team-${id}`]: "a" } } },
        syncItems: items("team", 1),
      });
      const [healthPort] = await freePorts(1);
      ctl = new ControllerProcess(cgroup, kubeconfig, healthPort, join(dir, "controller.log"), cfgNs, [
        "--reconcile-interval=10s",
      ]);
      await ctl.start();
      sampler.start(ctl.child!.pid);

      const everywhere = async (namespaces: string[], name: string, want: (o: unknown) => boolean) => {
        await ctl!.alive();
        for (const ns of namespaces) if (!want(await getObject(admin, cmPath(ns, name)))) return false;
        return true;
      };
      const data = (o: unknown) => (o as { data?: { a?: string } } | undefined)?.data?.a;
      const present = (o: unknown) => o !== undefined;
      for (let i = 0; i < OBJECTS_PER_NAMESPACE; i++) {
        await eventually(() => everywhere(tenantNs, `owned-${i}`, present), 120_000, `owned-${i} synced`);
      }
      await eventually(() => everywhere(labelled, "team-0", present), 120_000, "the labelled namespaces synced");

      // The tenant: one owner that exists in each namespace, and 1 MiB of references on every synced object, whose
      // data it changes too, so that espejo must restore (and keep the references of) every one.
      const owners = new Map<string, { name: string; uid: string }>();
      for (const ns of tenantNs) {
        const o = await tenant.client.request<{ metadata: { uid: string } }>({
          method: "POST",
          path: `/api/v1/namespaces/${ns}/configmaps`,
          body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "owner" } },
        });
        owners.set(ns, { name: "owner", uid: o.metadata.uid });
      }
      const targets = tenantNs.flatMap((ns) =>
        items("owned", OBJECTS_PER_NAMESPACE).map((it) => [ns, it.metadata.name])
      );
      await pool(targets, 2, ([ns, name]) =>
        tenant.client.request({
          method: "PATCH",
          path: cmPath(ns, name),
          contentType: "application/merge-patch+json",
          body: { metadata: { ownerReferences: references(owners.get(ns)!, name) }, data: { a: "tenant" } },
        }));
      const restored = async () => {
        await ctl!.alive();
        for (const [ns, name] of targets) {
          const o = await getObject(admin, cmPath(ns, name));
          const refs = o?.metadata?.ownerReferences;
          if (data(o) !== "espejo" || !Array.isArray(refs) || refs.length !== 5_000) return false;
        }
        return true;
      };
      await eventually(restored, 180_000, "every object restored with its 5,000 ownerReferences kept");
      const firstPeak = sampler.peakAnonKiB;

      // The restart: every cache fills again; then a SyncConfig reads a label key no SyncConfig read before.
      sampler.resetPeaks();
      assert.equal((await ctl.stop())?.code, 0, "a clean exit on SIGTERM");
      await ctl.start();
      sampler.start(ctl.child!.pid);
      await createSyncConfig(admin, cfgNs, "tier", {
        namespaceSelector: { labelSelector: { matchLabels: { [`espejo-test/tier-${id}`]: "x" } } },
        syncItems: items("tier", 1),
      });
      await eventually(() => everywhere(labelled, "tier-0", present), 120_000, "synced by a key read anew");
      await eventually(restored, 60_000, "still restored after the restart");
      const restartPeak = sampler.peakAnonKiB;
      const kills = await cgroup.oomKills();
      const figures = `anonymous peak ${(firstPeak / 1024).toFixed(1)} MiB at the first start, ` +
        `${(restartPeak / 1024).toFixed(1)} MiB at the restart; ${kills} kills by the memory limit`;
      console.log(`tenant memory: ${figures}`);
      assert.equal(kills, 0, `no kill by the memory limit (${figures}); log: ${await ctl.logTail()}`);
      assert.ok(firstPeak < ANON_GOAL_KIB && restartPeak < ANON_GOAL_KIB, `under 64 MiB: ${figures}`);
    } finally {
      sampler.stop();
      await ctl?.stop();
      await cgroup.remove();
      await deleteNamespaces(admin, [cfgNs, ...tenantNs, ...labelled]);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      admin.close();
    }
  },
);

async function deleteNamespaces(admin: HttpKubeClient, names: string[]): Promise<void> {
  for (const n of names) await admin.request({ method: "DELETE", path: `/api/v1/namespaces/${n}` }).catch(() => {});
}
