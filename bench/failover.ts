/**
 * `deno task bench --failover [--sizes 5000] [--limits] [--go-espejo PATH]`: how long enforcement is off when the
 * leader goes. Two replicas with leader election, as deploy/ runs them (the Lease's defaults: 15 s, renewed every
 * 2 s), on N namespaces × M SyncConfigs × K items in sync. Once the leader has synced every namespace and the other
 * replica stands by (espejo's: its caches filled), the leader is SIGKILLed (no release); 1 s later a synced ConfigMap
 * is deleted (namespace N/2, the last SyncConfig's) and a namespace is created. Timed from the kill, by the bench's
 * GETs every 250 ms, until the ConfigMap is back and the new namespace holds its M×K objects; and what the new
 * leader asked of the API server meanwhile (the audit log).
 *
 * With --go-espejo, the Go espejo v0.5.0 (built elsewhere: nothing of it is in this repository) runs the same
 * failover on the same workload, after espejo's, as a ServiceAccount bound to cluster-admin (it ships no RBAC for
 * the synced kinds), with --enable-leader-election and its defaults.
 */
import { join } from "node:path";
import { Cgroup } from "../testenv/cgroup.ts";
import {
  type AuditEvent,
  createServiceAccount,
  freePorts,
  type Identity,
  kubeconfigYaml,
} from "../testenv/controlplane.ts";
import { espejoIdentity } from "../testenv/espejo_rbac.ts";
import { spawnLogged } from "../testenv/process.ts";
import { createNamespace } from "../testenv/harness.ts";
import type { HttpKubeClient } from "../lib/kube/client.ts";
import { isNotFound } from "../lib/kube/errors.ts";
import { AuditTail, countBy } from "./kit/audit.ts";
import { ControllerProcess, sleep, until } from "./kit/controller.ts";
import { CONFIG_NS, convergedWorkload, namespaceName } from "./kit/converged.ts";
import { MemorySampler } from "./kit/process.ts";
import { parsePrometheusText, sumOf } from "./prometheus_text.ts";
import { BENCH_LABEL, ITEM_COLLECTIONS, ITEMS_PER_CONFIG } from "./workload.ts";

const M = 5;
const K = ITEMS_PER_CONFIG;
const LEASE_SECONDS = 15;
const log = (s: string) => console.error(`bench: failover: ${s}`);

export interface FailoverOptions {
  sizes: number[];
  limits?: { memoryBytes: number; cpuQuota: number };
  goEspejo?: string;
}

export interface FailoverFigures {
  controller: "espejo" | "Go espejo";
  /** From the kill to the deleted ConfigMap back; undefined: not within the wait. */
  restoredSeconds?: number;
  /** From the kill to the new namespace holding every object. */
  newNamespaceSeconds?: number;
  /** How long the bench waited at most. */
  waitedSeconds: number;
  /** The new leader's requests from the kill until both were done (or the wait ended), by verb and resource. */
  requests: Record<string, number>;
  standbyPeakAnonMiB: number;
  oomKills: number;
}

export interface FailoverSize {
  n: number;
  m: number;
  k: number;
  objects: number;
  setupConvergenceSeconds: number;
  runs: FailoverFigures[];
}

/** A replica of either controller: started, killed, its log and process. */
interface Replica {
  start(): Promise<void>;
  /** Whether the process ended (killed by the memory limit, crashed) without being stopped. */
  exited(): boolean;
  kill(): Promise<void>;
  stop(): Promise<void>;
  readonly pid: number;
  readonly logFile: string;
}

export async function failover(o: FailoverOptions): Promise<FailoverSize[]> {
  const out: FailoverSize[] = [];
  for (const n of o.sizes) out.push(await failoverAt(n, o));
  return out;
}

async function failoverAt(N: number, o: FailoverOptions): Promise<FailoverSize> {
  const w = await convergedWorkload(N, M, log);
  const runs: FailoverFigures[] = [];
  try {
    runs.push(await run(w, N, "espejo", o, 0));
    if (o.goEspejo) runs.push(await run(w, N, "Go espejo", o, 1));
    return { n: N, m: M, k: K, objects: N * M * K, setupConvergenceSeconds: w.setupSeconds, runs };
  } finally {
    await w.stop();
  }
}

async function run(
  w: Awaited<ReturnType<typeof convergedWorkload>>,
  N: number,
  controller: FailoverFigures["controller"],
  o: FailoverOptions,
  round: number,
): Promise<FailoverFigures> {
  const slowdown = o.limits ? 1 / o.limits.cpuQuota : 1;
  const cgroups: Cgroup[] = [];
  const replicas: Replica[] = [];
  const sampler = new MemorySampler();
  try {
    const identities: Identity[] = [];
    for (const name of ["replica-a", "replica-b"]) {
      identities.push(
        controller === "espejo"
          ? await espejoIdentity(w.admin, CONFIG_NS, { name: `espejo-${name}-${round}`, leaderElection: true })
          : await createServiceAccount(w.admin, CONFIG_NS, `go-espejo-${name}-${round}`, "cluster-admin"),
      );
      if (o.limits) {
        cgroups.push(
          await Cgroup.create(`espejo-failover-${round}-${name}`, o.limits.memoryBytes, o.limits.cpuQuota),
        );
      }
    }
    for (const [i, identity] of identities.entries()) {
      const kubeconfig = join(w.dir, `kubeconfig-${round}-${i}`);
      await Deno.writeTextFile(kubeconfig, kubeconfigYaml(w.cp.server, w.cp.caPem, identity));
      const logFile = join(w.dir, `replica-${round}-${i}.log`);
      replicas.push(
        controller === "espejo"
          ? await espejoReplica(kubeconfig, logFile, cgroups[i], slowdown)
          : await goReplica(o.goEspejo!, kubeconfig, logFile, cgroups[i]),
      );
    }
    const [leader, standby] = replicas;
    log(`${controller} N=${N}: the leader starts and syncs every namespace`);
    await leader.start();
    await until("a leader", () => logHas(leader.logFile, LEADING[controller]), 60_000 * slowdown, 500);
    if (controller === "espejo") {
      await until(
        "the leader's first sync of every namespace",
        async () => {
          try {
            return sumOf(await metricsOf(leader), "espejo_syncs_total") >= N;
          } catch (e) {
            // A scrape refused while the leader is busy is asked again; a leader that ended is the run's failure.
            if (leader.exited()) throw new Error(`the leader ended while syncing: ${await tailOf(leader.logFile)}`);
            log(`${controller} N=${N}: /metrics did not answer (${e}), asking again`);
            return false;
          }
        },
        Math.max(600_000, N * 100 * slowdown),
        1000,
      );
    }
    log(`${controller} N=${N}: the other replica starts and stands by`);
    await standby.start();
    sampler.start(standby.pid);
    if (controller === "espejo") {
      await until(
        "the standby's caches",
        () => logHas(standby.logFile, "Filled the caches"),
        Math.max(600_000, N * 100 * slowdown),
        1000,
      );
    } else {
      await until("the standby's start", () => logHas(standby.logFile, "attempting to acquire leader lease"), 60_000);
    }

    const audit = new AuditTail(w.cp.auditLogPath);
    await audit.skip();
    log(`${controller} N=${N}: SIGKILL of the leader`);
    await leader.kill();
    const killedAt = performance.now();
    await sleep(1000);
    const deletedIn = namespaceName(Math.floor(N / 2));
    const cm = `/api/v1/namespaces/${deletedIn}/configmaps/c${M - 1}-info`;
    await w.admin.request({ method: "DELETE", path: cm });
    const late = `bench-late-${round}`;
    await createNamespace(w.admin, late, { [BENCH_LABEL]: "yes" });
    let restoredSeconds: number | undefined;
    let newNamespaceSeconds: number | undefined;
    const waitMs = (LEASE_SECONDS + 60) * 1000 + N * 300; // the Go espejo's passes take ~0.2 s a namespace
    const deadline = performance.now() + waitMs;
    while (performance.now() < deadline && (restoredSeconds === undefined || newNamespaceSeconds === undefined)) {
      const at = (performance.now() - killedAt) / 1000;
      if (restoredSeconds === undefined && await exists(w.admin, cm)) restoredSeconds = at;
      if (newNamespaceSeconds === undefined && await objectsIn(w.admin, late) >= M * K) newNamespaceSeconds = at;
      await sleep(250);
    }
    const takeover = (await audit.read()).filter((e: AuditEvent) =>
      e.user.username === identities[1].username && e.verb !== "watch"
    );
    const figures: FailoverFigures = {
      controller,
      restoredSeconds,
      newNamespaceSeconds,
      waitedSeconds: waitMs / 1000,
      requests: countBy(takeover, (e) => `${e.verb} ${e.objectRef?.resource ?? e.requestURI}`),
      standbyPeakAnonMiB: sampler.peakAnonKiB / 1024,
      oomKills: (await Promise.all(cgroups.map((g) => g.oomKills()))).reduce((a, b) => a + b, 0),
    };
    log(`${controller} N=${N}: ${JSON.stringify(figures)}`);
    await w.admin.request({ method: "DELETE", path: `/api/v1/namespaces/${late}` });
    return figures;
  } finally {
    sampler.stop();
    for (const r of replicas) await r.stop().catch(() => {});
    for (const g of cgroups) await g.remove();
  }
}

/** What each controller logs when it takes the Lease. */
const LEADING = { "espejo": "Became leader", "Go espejo": "successfully acquired lease" } as const;

async function espejoReplica(kubeconfig: string, logFile: string, cgroup: Cgroup | undefined, slowdown: number) {
  const [metricsPort, healthPort] = await freePorts(2);
  const ctl = new ControllerProcess({
    kubeconfig,
    metricsPort,
    healthPort,
    logFile,
    configNamespace: CONFIG_NS,
    cgroup,
    readyTimeoutMs: 60_000 * slowdown,
  });
  const replica: Replica & { metricsPort: number } = {
    metricsPort,
    logFile,
    get pid() {
      return ctl.child.pid;
    },
    start: () => ctl.start(3600, ["--enable-leader-election"]),
    exited: () => ctl.exited,
    kill: async () => {
      ctl.memory.stop();
      ctl.child.kill("SIGKILL");
      await ctl.child.status;
    },
    stop: async () => {
      if (ctl.child) await ctl.stop();
    },
  };
  return replica;
}

async function goReplica(binary: string, kubeconfig: string, logFile: string, cgroup: Cgroup | undefined) {
  const [metricsPort] = await freePorts(1);
  let child: Deno.ChildProcess | undefined;
  const replica: Replica & { metricsPort: number } = {
    metricsPort,
    logFile,
    get pid() {
      return child!.pid;
    },
    exited: () => false,
    start: () => {
      // Outside a cluster, controller-runtime finds no namespace for its Lease (it reads the in-cluster one) and the
      // Go espejo has no flag for it: the process gets a private /run holding that file, this machine's stays as is.
      const inCluster = "/run/secrets/kubernetes.io/serviceaccount";
      const setup = `mount -t tmpfs none /run && mkdir -p ${inCluster} && printf ${CONFIG_NS} > ${inCluster}/namespace`;
      const argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", `${setup} && exec "$@"`, "sh"];
      child = spawnLogged([...argv, binary, "--enable-leader-election", `--metrics-addr=127.0.0.1:${metricsPort}`], {
        env: { KUBECONFIG: kubeconfig, WATCH_NAMESPACE: CONFIG_NS, HOME: Deno.env.get("HOME") ?? "/tmp" },
        logFile,
        cgroup,
      });
      return Promise.resolve();
    },
    kill: async () => {
      child?.kill("SIGKILL");
      await child?.status;
    },
    stop: async () => {
      try {
        child?.kill("SIGTERM");
      } catch {
        // ended already
      }
      await child?.status;
    },
  };
  return replica;
}

async function metricsOf(r: Replica) {
  const port = (r as Replica & { metricsPort: number }).metricsPort;
  return parsePrometheusText(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
}

async function tailOf(file: string): Promise<string> {
  return (await Deno.readTextFile(file).catch(() => "")).split("\n").slice(-5).join("\n");
}

async function logHas(file: string, text: string): Promise<boolean> {
  return (await Deno.readTextFile(file).catch(() => "")).includes(text);
}

async function exists(admin: HttpKubeClient, path: string): Promise<boolean> {
  try {
    await admin.request({ method: "GET", path });
    return true;
  } catch (e) {
    if (isNotFound(e)) return false;
    throw e;
  }
}

/** Objects of the items' kinds in namespace `ns`. */
async function objectsIn(admin: HttpKubeClient, ns: string): Promise<number> {
  let n = 0;
  for (const collection of ITEM_COLLECTIONS) {
    const path = collection.replace(/\/([a-z]+)$/, `/namespaces/${ns}/$1`);
    n += (await admin.request<{ items: unknown[] }>({ method: "GET", path })).items.length;
  }
  return n;
}

const s1 = (v: number | undefined, waited: number) =>
  v === undefined ? `not within ${waited.toFixed(0)} s` : `${v.toFixed(1)} s`;

/** The results as a page of bench/results. */
export function failoverMarkdown(
  sizes: FailoverSize[],
  meta: { date: string; command: string; cpus: number; commit: string; limits: boolean },
): string {
  const lines = [
    "# espejo failover",
    "",
    `${meta.date}, ${meta.cpus} CPUs, commit ${meta.commit}, \`${meta.command}\`. Two replicas with leader election ` +
    `(the Lease's defaults: ${LEASE_SECONDS} s), ${
      meta.limits ? "each inside 100Mi / 300m (cgroup v1)" : "no limits"
    }` +
    "; the workload converged beforehand by a controller outside them. The leader is SIGKILLed; 1 s later a synced " +
    "ConfigMap is deleted and a namespace created; times from the kill.",
    "",
    "| N | objects | controller | deleted ConfigMap restored | new namespace synced | the new leader's requests meanwhile | standby's peak anonymous | OOM kills |",
    "|---|---|---|---|---|---|---|---|",
  ];
  for (const s of sizes) {
    for (const r of s.runs) {
      const requests = Object.entries(r.requests).sort((a, b) => b[1] - a[1]).map(([k, n]) => `${n} ${k}`).join(", ");
      lines.push(
        `| ${s.n} | ${s.objects} | ${r.controller} | ${s1(r.restoredSeconds, r.waitedSeconds)} | ${
          s1(r.newNamespaceSeconds, r.waitedSeconds)
        } | ${requests || "none"} | ${r.standbyPeakAnonMiB.toFixed(1)} MiB | ${r.oomKills} |`,
      );
    }
  }
  return lines.join("\n") + "\n";
}
