/**
 * The hot standby (lib/controller/standby.ts): two replicas run as the image runs them (deno.permissions,
 * deno.v8-flags, leader election on), each in a cgroup of the Go espejo's limits (100Mi, 30 % of a CPU). While the
 * first holds the Lease, the second fills the caches of every kind the SyncConfigs name (its log says how many
 * objects) and, by the audit log, writes nothing at all, reads no single object but the Lease, writes no status and no
 * Event, even while a tenant's changes are restored by the leader. When the leader is SIGKILLed, the standby takes the
 * Lease and restores a ConfigMap deleted after the kill without reading any of the items' kinds again (no list, no
 * WatchList, no GET of an object).
 *
 * What a standby costs is measured at a size with ESPEJO_STANDBY_NAMESPACES (default 3), ESPEJO_STANDBY_CONFIGS
 * (default 2) and ESPEJO_STANDBY_REST_S (default 0: no rest window): the replicas then run with the deployed Lease
 * timing (15 s, renewed every 2 s) instead of the test's (4 s, every 500 ms), and the standby's requests per minute
 * at rest (audit log, watches included) and its anonymous memory are printed.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Cgroup } from "../../testenv/cgroup.ts";
import { ControllerProcess } from "../../testenv/controller_process.ts";
import { freePorts, kubeconfigYaml } from "../../testenv/controlplane.ts";
import type { AuditEvent, Identity } from "../../testenv/controlplane.ts";
import { espejoIdentity } from "../../testenv/espejo_rbac.ts";
import { MemorySampler, statusKiB } from "../../testenv/memory_sampler.ts";
import { auditEvents, clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";
import { auditNow, createNamespace, createSyncConfig, getObject, statusOf } from "../../testenv/harness.ts";
import type { HttpKubeClient } from "../../lib/kube/client.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const MEMORY_LIMIT = 100 * 1024 * 1024;
const CPU_QUOTA = 0.3;
const NAMESPACES = Number(Deno.env.get("ESPEJO_STANDBY_NAMESPACES") ?? 3);
const CONFIGS = Number(Deno.env.get("ESPEJO_STANDBY_CONFIGS") ?? 2);
const REST_S = Number(Deno.env.get("ESPEJO_STANDBY_REST_S") ?? 0);
/** The test's Lease timing, or (when measuring) the deployed one: the flags' defaults. */
const LEASE_FLAGS = REST_S > 0 ? [] : ["--lease-duration=4s", "--renew-deadline=3s", "--retry-period=500ms"];
const LEASE_MS = REST_S > 0 ? 15_000 : 4_000;
/** The collections of the items' kinds (a ConfigMap is also a deleteItem's kind). */
const ITEM_RESOURCES = ["configmaps", "roles", "rolebindings", "networkpolicies"];
const WRITES = ["create", "update", "patch", "delete", "deletecollection"];

/** SyncConfig `c<i>`: 4 items (ConfigMap, Role, RoleBinding, NetworkPolicy) and a deleteItem, in labelled namespaces. */
function syncConfigSpec(i: number, label: string) {
  const n = `c${i}`;
  return {
    namespaceSelector: { labelSelector: { matchLabels: { [label]: "yes" } } },
    syncItems: [
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: `${n}-info` }, data: { namespace: "${PROJECT_NAME}" } },
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "Role",
        metadata: { name: `${n}-reader` },
        rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list"] }],
      },
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        metadata: { name: `${n}-reader` },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: `${n}-reader` },
        subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: "${PROJECT_NAME}-members" }],
      },
      {
        apiVersion: "networking.k8s.io/v1",
        kind: "NetworkPolicy",
        metadata: { name: `${n}-same-namespace` },
        spec: { podSelector: {}, ingress: [{ from: [{ podSelector: {} }] }] },
      },
    ],
    deleteItems: [{ apiVersion: "v1", kind: "ConfigMap", name: `${n}-retired` }],
  };
}

/** Runs `fn` on every element, `width` at a time. */
async function pool<T>(items: T[], width: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

/** The JSON log records of a controller process whose message starts with `start`. */
async function logRecords(ctl: ControllerProcess, start: string): Promise<Record<string, unknown>[]> {
  const text = await Deno.readTextFile(ctl.logFile).catch(() => "");
  return text.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((r) => typeof r.message === "string" && r.message.startsWith(start));
}

/**
 * Every request of `id` received between `from` and `to` (ISO times), watches included, once each (a watch has an
 * event when it starts and one when it ends).
 */
function requestsOf(events: AuditEvent[], id: Identity, from: string, to = "9999"): AuditEvent[] {
  const seen = new Set<string>();
  return events.filter((e) => {
    if (e.user.username !== id.username || e.requestReceivedTimestamp < from || e.requestReceivedTimestamp >= to) {
      return false;
    }
    const auditId = (e as AuditEvent & { auditID?: string }).auditID ?? crypto.randomUUID();
    if (seen.has(auditId)) return false;
    seen.add(auditId);
    return true;
  });
}

const describe = (e: AuditEvent) => `${e.verb} ${e.requestURI}`;
/** A read of a kind's whole state: a list, or a watch that starts with it (WatchList). */
const readsWhole = (e: AuditEvent) =>
  e.verb === "list" || (e.verb === "watch" && e.requestURI.includes("sendInitialEvents=true"));
const isLease = (e: AuditEvent) => e.objectRef?.resource === "leases";

Deno.test(
  "A standby fills its caches and writes nothing, reads no object, writes no status and no Event; after a SIGKILL " +
    "of the leader it restores a deleted ConfigMap without reading ConfigMaps again, and syncs a namespace created then",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("standby");
    const prefix = uniqueName("hot");
    const label = `espejo-test/standby-${prefix}`;
    const namespaces = Array.from({ length: NAMESPACES }, (_, i) => `${prefix}-${i}`);
    const late = `${prefix}-late`;
    const dir = await Deno.makeTempDir({ prefix: "espejo-standby-" });
    const sampler = new MemorySampler();
    const replicas: ControllerProcess[] = [];
    const cgroups: Cgroup[] = [];
    try {
      await createNamespace(admin, cfgNs);
      await pool(namespaces, 8, (ns) => createNamespace(admin, ns, { [label]: "yes" }));
      const identities: Identity[] = [];
      const ports = await freePorts(2);
      for (const [i, name] of ["espejo-a", "espejo-b"].entries()) {
        const identity = await espejoIdentity(admin, cfgNs, { name, leaderElection: true });
        identities.push(identity);
        const kubeconfig = join(dir, name);
        await Deno.writeTextFile(kubeconfig, kubeconfigYaml(c.server, c.caPem, identity));
        const cgroup = await Cgroup.create(
          `espejo-${name}-${crypto.randomUUID().slice(0, 8)}`,
          MEMORY_LIMIT,
          CPU_QUOTA,
        );
        cgroups.push(cgroup);
        replicas.push(
          new ControllerProcess(cgroup, kubeconfig, ports[i], join(dir, `${name}.log`), cfgNs, [
            "--enable-leader-election",
            "--reconcile-interval=10s",
            ...LEASE_FLAGS,
          ]),
        );
      }
      const [leader, standby] = replicas;
      const [, standbyId] = identities;
      for (let i = 0; i < CONFIGS; i++) await createSyncConfig(admin, cfgNs, `c${i}`, syncConfigSpec(i, label));

      // The leader converges first: the standby then finds every object there.
      await leader.start();
      await eventually(async () => (await logRecords(leader, "Became leader")).length > 0, 30_000, "a leader");
      const synced = async () => {
        await leader.alive();
        for (let i = 0; i < CONFIGS; i++) {
          if ((await statusOf(admin, cfgNs, `c${i}`)).synchronizedItemCount !== NAMESPACES * 4) return false;
        }
        return true;
      };
      await eventually(synced, 60_000 + NAMESPACES * CONFIGS * 100, "the leader to converge");

      const standbySince = auditNow();
      const startedAt = Date.now();
      await standby.start();
      sampler.start(standby.child!.pid);
      const filled = await eventually(
        async () => (await logRecords(standby, "Filled the caches")).find((r) => r.standby === true),
        120_000,
        "the standby's caches to fill",
      );
      const objects = Number(filled.objects);
      const fillS = (Date.parse(String(filled.time)) - startedAt) / 1000;
      assert.ok(
        objects >= NAMESPACES * CONFIGS * 4,
        `the standby holds every synced object: ${JSON.stringify(filled)}`,
      );
      assert.equal(filled.kinds, 5, "4 item kinds and the deleteItem's");
      const fillPeakKiB = sampler.peakAnonKiB;

      // A tenant's changes meanwhile: the leader restores them, the standby sees them and stays quiet.
      const cm = (ns: string, name: string) => `/api/v1/namespaces/${ns}/configmaps/${name}`;
      await admin.request({
        method: "PATCH",
        path: cm(namespaces[0], "c0-info"),
        contentType: "application/merge-patch+json",
        body: { data: { namespace: "tenant" } },
      });
      await admin.request({ method: "DELETE", path: cm(namespaces[1 % NAMESPACES], "c0-info") });
      await eventually(
        async () => {
          const a = await getObject(admin, cm(namespaces[0], "c0-info"));
          const b = await getObject(admin, cm(namespaces[1 % NAMESPACES], "c0-info"));
          return a?.data?.namespace === namespaces[0] && b !== undefined;
        },
        30_000,
        "the leader to restore the tenant's changes",
      );

      let rest = "";
      if (REST_S > 0) {
        // A measurement window, not a wait for a condition: what the standby costs while nothing happens.
        sampler.resetPeaks();
        const from = auditNow();
        const cpuFrom = await cpuSeconds(standby.child!.pid);
        await new Promise((r) => setTimeout(r, REST_S * 1000));
        const cpu = await cpuSeconds(standby.child!.pid) - cpuFrom;
        const to = auditNow();
        const atRest = requestsOf(await auditEvents(c), standbyId, from, to);
        const kib = await statusKiB(standby.child!.pid);
        const byKind = new Map<string, number>();
        for (const e of atRest) {
          const k = `${e.verb} ${e.objectRef?.resource ?? e.requestURI}`;
          byKind.set(k, (byKind.get(k) ?? 0) + 1);
        }
        const mib = (k: number) => `${(k / 1024).toFixed(1)} MiB`;
        const kinds = [...byKind].map(([k, n]) => `${n} ${k}`).join(", ");
        rest = `at rest for ${REST_S} s: ${(atRest.length * 60 / REST_S).toFixed(1)} requests a minute (${kinds}); ` +
          `anonymous ${mib(kib("RssAnon"))} now, peak ${mib(sampler.peakAnonKiB)}; resident ${mib(kib("VmRSS"))}; ` +
          `CPU ${(cpu * 1000 / REST_S).toFixed(1)} ms a second`;
      }

      // What the standby asked of the API server before the kill: only the Lease, reads of whole kinds, discovery.
      const killSince = auditNow();
      const before = requestsOf(await auditEvents(c), standbyId, standbySince, killSince);
      const show = (events: AuditEvent[]) => events.map(describe).join("\n");
      assert.deepEqual(
        show(before.filter((e) => WRITES.includes(e.verb))),
        "",
        "no write of any kind, the Lease's too",
      );
      assert.deepEqual(show(before.filter((e) => e.objectRef?.subresource === "status")), "", "no status");
      assert.deepEqual(show(before.filter((e) => e.objectRef?.resource === "events")), "", "no Event");
      assert.deepEqual(
        show(before.filter((e) => e.verb === "get" && e.objectRef?.name && !isLease(e))),
        "",
        "no GET of an object but the Lease",
      );
      for (const resource of ITEM_RESOURCES) {
        assert.ok(
          before.some((e) => readsWhole(e) && e.objectRef?.resource === resource),
          `the standby read the ${resource} it caches`,
        );
      }
      assert.ok(before.some((e) => e.verb === "get" && isLease(e)), "it asked for the Lease");

      // SIGKILL: no release. The standby takes the Lease once it expires and acts with what it holds.
      leader.child!.kill("SIGKILL");
      await leader.exit;
      const killedAt = Date.now();
      const afterKill = auditNow();
      const deleted = namespaces[NAMESPACES - 1];
      await admin.request({ method: "DELETE", path: cm(deleted, `c${CONFIGS - 1}-info`) });
      // A namespace created while no replica leads: synced by the new leader from its event, as any other.
      await createNamespace(admin, late, { [label]: "yes" });
      await eventually(
        () => getObject(admin, cm(deleted, `c${CONFIGS - 1}-info`)),
        LEASE_MS + 30_000,
        "the new leader to restore the deleted ConfigMap",
      );
      const restoredMs = Date.now() - killedAt;
      const lateSynced = async () => {
        for (let i = 0; i < CONFIGS; i++) if (!(await getObject(admin, cm(late, `c${i}-info`)))) return false;
        return true;
      };
      await eventually(lateSynced, LEASE_MS + 30_000, "the new leader to sync the namespace created after the kill");
      const lateMs = Date.now() - killedAt;
      assert.ok((await logRecords(standby, "Became leader")).length > 0, "the standby took the Lease");
      const after = requestsOf(await auditEvents(c), standbyId, afterKill);
      assert.deepEqual(
        show(after.filter((e) => ITEM_RESOURCES.includes(e.objectRef?.resource ?? "") && readsWhole(e))),
        "",
        "no list or WatchList of the items' kinds after the takeover",
      );
      assert.deepEqual(
        show(after.filter((e) => e.verb === "get" && ITEM_RESOURCES.includes(e.objectRef?.resource ?? ""))),
        "",
        "no GET of an object either: every one was judged while standing by",
      );
      assert.ok(
        after.some((e) => e.verb === "create" && e.objectRef?.name === `c${CONFIGS - 1}-info`),
        "the new leader created the deleted ConfigMap",
      );
      const beforeMinutes = (Date.parse(killSince) - Date.parse(standbySince)) / 60_000;
      const figures = `standby at ${NAMESPACES} namespaces x ${CONFIGS} SyncConfigs x 4 items: ${objects} objects ` +
        `cached ${fillS.toFixed(1)} s after its start, anonymous peak while filling ${
          (fillPeakKiB / 1024).toFixed(1)
        } MiB, ` +
        `${before.length} requests in ${beforeMinutes.toFixed(2)} min before the kill (fill included); ` +
        `${rest ? `${rest}; ` : ""}restored ${restoredMs} ms after the kill, a namespace created then synced after ` +
        `${lateMs} ms (Lease ${LEASE_MS / 1000} s)`;
      console.log(figures);
      assert.ok(
        restoredMs < LEASE_MS + 5_000 + (REST_S > 0 ? 0 : 4_000),
        `restored within the Lease + 5 s: ${figures}`,
      );
      for (const g of cgroups) assert.equal(await g.oomKills(), 0, "no kill by the memory limit");
    } finally {
      sampler.stop();
      for (const r of replicas) {
        if (r.running()) r.child!.kill("SIGKILL");
        await r.exit;
      }
      for (const g of cgroups) await g.remove();
      await deleteNamespaces(admin, [cfgNs, ...namespaces, late]);
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      admin.close();
    }
  },
);

/** User and system CPU time of process `pid` so far, in seconds (/proc/PID/stat, clock ticks of 1/100 s). */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function deleteNamespaces(admin: HttpKubeClient, names: string[]): Promise<void> {
  await pool(names, 8, (n) => admin.request({ method: "DELETE", path: `/api/v1/namespaces/${n}` }).catch(() => {}));
}
