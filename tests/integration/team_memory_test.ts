/**
 * Memory per SyncConfig, given back with it (issue 44): in delegated mode (`--trusted-namespaces espejo-system`), a
 * team's author — a ServiceAccount that may write SyncConfigs in the team's namespace only, acting with its own token
 * — edits its SyncConfig 1,000 times, every edit with label keys no selector read before, then deletes it. The
 * controller runs as it ships inside the Go espejo's limits (a cgroup of 100M memory and 30 % of a CPU). It is not
 * killed by the memory limit, and once it has settled after the deletion its anonymous memory is within 5 MiB of what
 * it was before the first edit.
 *
 * Three edits in four carry fresh keys: two a selector within the bounds (lib/model/selector.ts: keys and characters of
 * a label selector), one 2,000 keys (the issue's edit: espejo before the bounds kept every key it ever read and was
 * killed after about 80 such edits). The fourth has few keys and too many characters of values. The team's two target
 * namespaces carry more labels than a namespace keeps whole, so their labels are trimmed to the keys selectors read
 * and every fresh key makes them stale: espejo reads them again at most once each per sweep, and a sweep starts at most
 * every SWEEP_GAP_MS (lib/controller/trimmed_labels.ts). Then, on the same controller, an oversized selector of each kind is Invalid and
 * its condition names the field and the bound.
 *
 * WATCH_NAMESPACE is the team's namespace, not empty as in the overlay (docs/delegation.md): a controller reading every
 * namespace would judge the SyncConfigs of the other tests of a run (and write their status). Delegated mode is the
 * same: a namespace outside --trusted-namespaces, a SyncConfig that names its ServiceAccount.
 *
 * The figures are printed, with V8's heap in use and in total from /metrics: the garbage of the edits stays "in use"
 * until a collection, which the controller makes once quiet (lib/controller/memory_return.ts).
 *
 * ESPEJO_TEAM_MEMORY_EDITS changes the number of edits (a shorter run while working on it).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Cgroup } from "../../testenv/cgroup.ts";
import { ControllerProcess } from "../../testenv/controller_process.ts";
import { freePorts, kubeconfigYaml } from "../../testenv/controlplane.ts";
import { createTeam, delegationFor } from "../../testenv/delegation.ts";
import { espejoIdentity } from "../../testenv/espejo_rbac.ts";
import { condition, getObject, statusOf, type SyncConfigStatusView } from "../../testenv/harness.ts";
import { MemorySampler, statusKiB } from "../../testenv/memory_sampler.ts";
import { auditEvents, clientFor, eventually, testCluster } from "../../testenv/shared.ts";
import { createTenant } from "../../testenv/tenant.ts";
import { isNotFound } from "../../lib/kube/errors.ts";
import { SWEEP_GAP_MS } from "../../lib/controller/trimmed_labels.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const MEMORY_LIMIT = 100 * 1024 * 1024;
const CPU_QUOTA = 0.3;
const EDITS = Number(Deno.env.get("ESPEJO_TEAM_MEMORY_EDITS") ?? 1000);
/** Anonymous memory after the deletion, once settled, may exceed what it was before the edits by this much. */
const SLACK_KIB = 5 * 1024;
/** Distinct label keys of an edit within the bounds (the team's label and fresh keys). */
const KEYS = 64;
/** Fresh label keys of the issue's edit. */
const MANY_KEYS = 2000;
/** The team waits for espejo to have judged its latest generation every this many edits. */
const PACE = 20;
const SC_API = "/apis/sync.appuio.ch/v1alpha1";
const MiB = (kib: number) => `${(kib / 1024).toFixed(1)} MiB`;

type Requirement = { key: string; operator: string; values?: string[] };
type Selector = { matchLabels?: Record<string, string>; matchExpressions?: Requirement[] };

/** A key no selector read before: 76 characters, distinct for each edit and index. */
const freshKey = (edit: number, i: number) => `fresh.example/${`k${edit}-${i}-`.padEnd(63, "x")}`;
/** `n` requirements on fresh keys that no namespace carries: the selection stays what the team's label selects. */
const absent = (edit: number, n: number): Requirement[] =>
  Array.from({ length: n }, (_, i) => ({ key: freshKey(edit, i), operator: "DoesNotExist" }));

/** Edit `edit`'s selector: fresh keys within the bounds, the issue's 2,000, or too many characters of values. */
function selectorOf(label: string, edit: number): Selector {
  const base = { [label]: "yes" };
  switch (edit % 4) {
    case 1:
      return { matchLabels: base, matchExpressions: absent(edit, MANY_KEYS) };
    case 3: // two keys, 300 values of 63 characters: about 19,000 characters
      return {
        matchLabels: base,
        matchExpressions: [{
          key: freshKey(edit, 0),
          operator: "NotIn",
          values: Array.from({ length: 300 }, (_, i) => `v${edit}-${i}-`.padEnd(63, "v")),
        }],
      };
    default:
      return { matchLabels: base, matchExpressions: absent(edit, KEYS - 1) };
  }
}

/** The newest generation the status's verdict (Ready, or Invalid) speaks of. */
function judgedGeneration(s: SyncConfigStatusView): number {
  const conditions = (s.conditions ?? []) as { type: string; observedGeneration?: number }[];
  return Math.max(0, ...conditions.filter((c) => c.type === "Ready").map((c) => c.observedGeneration ?? 0));
}

/** How often the controller's log says it gave heap back to the system (lib/controller/memory_return.ts). */
async function returns(ctl: ControllerProcess): Promise<number> {
  return (await Deno.readTextFile(ctl.logFile).catch(() => "")).split("Gave back").length - 1;
}

Deno.test(
  "Inside 100M/30 %, a team's 1,000 edits of a delegated SyncConfig with fresh label keys, then its deletion, leave " +
    "anonymous memory within 5 MiB of before; oversized selectors are Invalid naming the bound",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const team = await createTeam(admin, 2, 2);
    const dir = await Deno.makeTempDir({ prefix: "espejo-team-memory-" });
    const cgroup = await Cgroup.create(`espejo-teammem-${crypto.randomUUID().slice(0, 8)}`, MEMORY_LIMIT, CPU_QUOTA);
    const sampler = new MemorySampler();
    let ctl: ControllerProcess | undefined;
    let undelegate = async () => {};
    try {
      // The team's author: SyncConfigs in the team's namespace, nothing else (configmaps first: createTenant waits
      // for its RoleBinding by listing the first resource).
      const author = await createTenant(c, admin, team.namespace, {
        rules: [
          { apiGroups: [""], resources: ["configmaps"] },
          { apiGroups: ["sync.appuio.ch"], resources: ["syncconfigs"] },
        ],
      });
      // More labels than a namespace keeps whole (MAX_KEPT_LABEL_COUNT): its labels are trimmed to the keys read.
      const padding = Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`pad.example/p${i}`, "x"]));
      for (const ns of team.targets) {
        await admin.request({
          method: "PATCH",
          path: `/api/v1/namespaces/${ns}`,
          contentType: "application/merge-patch+json",
          body: { metadata: { labels: padding } },
        });
      }
      const identity = await espejoIdentity(admin, team.namespace);
      undelegate = await delegationFor(admin, identity, team.label);
      const kubeconfig = join(dir, "kubeconfig");
      await Deno.writeTextFile(kubeconfig, kubeconfigYaml(c.server, c.caPem, identity));
      const scPath = `${SC_API}/namespaces/${team.namespace}/syncconfigs/fresh-keys`;
      await author.client.request({
        method: "POST",
        path: `${SC_API}/namespaces/${team.namespace}/syncconfigs`,
        body: {
          apiVersion: "sync.appuio.ch/v1alpha1",
          kind: "SyncConfig",
          metadata: { name: "fresh-keys", annotations: { "sync.appuio.ch/service-account": "writer" } },
          spec: {
            namespaceSelector: { labelSelector: { matchLabels: { [team.label]: "yes" } } },
            syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "team-settings" }, data: { a: "b" } }],
          },
        },
      });
      const [healthPort, metricsPort] = await freePorts(2);
      ctl = new ControllerProcess(cgroup, kubeconfig, healthPort, join(dir, "controller.log"), team.namespace, [
        "--trusted-namespaces=espejo-system",
        "--reconcile-interval=10m", // no interval pass re-reads the trimmed namespaces: the edits alone do
        "-v", // the debug line of each return of memory (lib/controller/memory_return.ts)
        `--metrics-addr=127.0.0.1:${metricsPort}`,
      ]);
      const heapOf = async () => {
        const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
        const v = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? NaN) / 2 ** 20;
        return `heap ${v("nodejs_heap_size_used_bytes").toFixed(1)}/${
          v("nodejs_heap_size_total_bytes").toFixed(1)
        } MiB, ` +
          `external ${v("nodejs_external_memory_bytes").toFixed(1)} MiB`;
      };
      await ctl.start();
      sampler.start(ctl.child!.pid);
      const synced = async () => {
        await ctl!.alive();
        for (const ns of team.targets) {
          if (!await getObject(admin, `/api/v1/namespaces/${ns}/configmaps/team-settings`)) return false;
        }
        return true;
      };
      await eventually(synced, 120_000, "the team's ConfigMap in both targets");
      // Settled: the first quiet after the start gives back what the start's burst left.
      await eventually(async () => (await ctl!.alive(), await returns(ctl!)) > 0, 120_000, "a first return of memory");
      const anonKiB = async () => (await statusKiB(ctl!.child!.pid))("RssAnon");
      const before = await anonKiB();
      console.log(`team memory: before: ${MiB(before)} anonymous, ${await heapOf()}`);
      const startedPeak = sampler.peakAnonKiB;

      // The edits, as the team's author: the selector replaced whole each time.
      const editsFrom = new Date(Date.now() - 1000).toISOString();
      const editStart = Date.now();
      let generation = 0;
      for (let edit = 0; edit < EDITS; edit++) {
        const sc = await author.client.request<{ metadata: { generation: number } }>({
          method: "PATCH",
          path: scPath,
          contentType: "application/json-patch+json",
          body: [{
            op: "replace",
            path: "/spec/namespaceSelector/labelSelector",
            value: selectorOf(team.label, edit),
          }],
        });
        generation = sc.metadata.generation;
        if ((edit + 1) % PACE === 0 || edit === EDITS - 1) {
          await eventually(
            async () =>
              (await ctl!.alive(), judgedGeneration(await statusOf(admin, team.namespace, "fresh-keys"))) >=
                generation,
            120_000,
            `edit ${edit + 1} of ${EDITS} (generation ${generation}) judged`,
          );
        }
      }
      const editMs = Date.now() - editStart;
      const returnsAfterEdits = await returns(ctl);
      await eventually(async () => (await ctl!.alive(), await returns(ctl!)) > returnsAfterEdits, 150_000, "a return")
        .catch(() => {}); // the figure below is reported either way
      const afterEdits = await anonKiB();
      console.log(`team memory: after the edits: ${MiB(afterEdits)} anonymous, ${await heapOf()}`);
      const editsPeak = sampler.peakAnonKiB;

      // Deletion, by the author; once it is gone (espejo released it), memory settles back.
      await author.client.request({ method: "DELETE", path: scPath });
      await eventually(
        async () => {
          await ctl!.alive();
          try {
            await admin.request({ method: "GET", path: scPath });
            return false;
          } catch (e) {
            if (isNotFound(e)) return true;
            throw e;
          }
        },
        120_000,
        "the SyncConfig gone",
      );
      let afterDeletion = await anonKiB();
      await eventually(
        async () => {
          await ctl!.alive();
          afterDeletion = await anonKiB();
          return afterDeletion <= before + SLACK_KIB;
        },
        180_000,
        "anonymous memory back within 5 MiB of before",
      ).catch(() => {}); // asserted below with the figures
      console.log(`team memory: after the deletion: ${MiB(afterDeletion)} anonymous, ${await heapOf()}`);
      const kills = await cgroup.oomKills();
      const figures = `anonymous ${MiB(before)} before the edits (peak ${MiB(startedPeak)} at the start), ` +
        `${MiB(afterEdits)} after ${EDITS} edits in ${(editMs / 1000).toFixed(0)} s (peak ${MiB(editsPeak)}), ` +
        `${MiB(afterDeletion)} after the deletion; ${kills} kills by the memory limit`;
      console.log(`team memory: ${figures}`);
      assert.equal(kills, 0, `no kill by the memory limit (${figures}); log: ${await ctl.logTail()}`);
      assert.ok(afterDeletion <= before + SLACK_KIB, `within 5 MiB of before: ${figures}`);

      // Every fresh key made the trimmed targets stale: espejo read them again, at most once a sweep.
      const reads = (await auditEvents(c)).filter((e) =>
        e.requestReceivedTimestamp >= editsFrom && e.user.username === identity.username && e.verb === "get" &&
        e.objectRef?.resource === "namespaces" && team.targets.includes(e.objectRef?.name ?? "")
      );
      const sweeps = Math.ceil((Date.now() - editStart) / SWEEP_GAP_MS) + 1;
      console.log(`team memory: ${reads.length} reads of the 2 trimmed namespaces during ${EDITS} edits`);
      assert.ok(reads.length <= 2 * sweeps, `at most one read of each a sweep, ${sweeps} sweeps: ${reads.length}`);

      // Oversized selectors are Invalid, their condition naming the field and the bound.
      const invalid = async (name: string, selector: Selector, message: RegExp) => {
        await author.client.request({
          method: "POST",
          path: `${SC_API}/namespaces/${team.namespace}/syncconfigs`,
          body: {
            apiVersion: "sync.appuio.ch/v1alpha1",
            kind: "SyncConfig",
            metadata: { name, annotations: { "sync.appuio.ch/service-account": "writer" } },
            spec: {
              namespaceSelector: { labelSelector: selector },
              syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x" } }],
            },
          },
        });
        const s = await eventually(
          async () => {
            await ctl!.alive();
            const s = await statusOf(admin, team.namespace, name);
            return condition(s, "Invalid")?.status === "True" ? s : undefined;
          },
          60_000,
          `${name} Invalid`,
        );
        assert.match(condition(s, "Invalid")?.message ?? "", message);
      };
      await invalid(
        "many-keys",
        selectorOf(team.label, 1),
        new RegExp(
          `^SyncConfig ${team.namespace}/many-keys: \\.spec\\.namespaceSelector\\.labelSelector reads 2001 ` +
            "distinct label keys, more than the 64 allowed",
        ),
      );
      await invalid(
        "long-values",
        selectorOf(team.label, 3),
        new RegExp(
          `^SyncConfig ${team.namespace}/long-values: \\.spec\\.namespaceSelector\\.labelSelector has \\d+ ` +
            "characters of label keys and values, more than the 16384 allowed",
        ),
      );
    } finally {
      sampler.stop();
      await ctl?.stop();
      await cgroup.remove();
      await undelegate();
      for (const ns of [team.namespace, ...team.targets]) {
        await admin.request({ method: "DELETE", path: `/api/v1/namespaces/${ns}` }).catch(() => {});
      }
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      admin.close();
    }
  },
);
