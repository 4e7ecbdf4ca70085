/**
 * `deno task compare --go-espejo /path/to/espejo-go [flags]`: a black-box comparison of espejo (Deno) with the Go
 * espejo it replaces, on one throwaway control plane (tests/testenv), the same scenario for both.
 *
 * Semantic phase, for each controller in turn (the Go binary, then `deno run ... main.ts`): fresh namespaces whose
 * names differ only by a run prefix, pre-existing objects, SyncConfigs covering the documented semantics; the controller
 * runs with WATCH_NAMESPACE=<prefix>-cfg and a kubeconfig of a ServiceAccount bound to cluster-admin (the same for
 * both: the Go espejo ships no RBAC for synced kinds). Once converged (statuses present, objects and statuses
 * unchanged for 3 reconcile intervals) everything is snapshotted (checkpoint 1); then namespaces are relabelled,
 * objects edited by hand and SyncConfigs edited, and after convergence a second snapshot is taken (checkpoint 2).
 * The snapshots of both controllers are normalised and diffed, and each difference is labelled with the bullet of
 * docs/migration.md's "Different, on purpose" list it belongs to, or NOT LISTED. espejo (Deno) runs with the shipped
 * permission set (deno.permissions), as its image does.
 *
 * Scale phase (--namespaces N --items K, 0 namespaces skips it): N namespaces and K items, the controller under the
 * Go espejo Deployment's limits (memory 100Mi, cpu 300m, as cgroup v1 memory and cpu controllers; needs root), timed
 * to convergence (all N*K objects exist and every status counts them), with peak memory and OOM kills.
 *
 * Requests are counted in the API server's audit log by the controller's identity. Prints a Markdown report, also
 * written with snapshots and controller logs to --out (default: a new temporary directory).
 *
 * Nothing of the Go espejo is part of this repository: pass a binary built elsewhere.
 *
 * This file runs the phases and writes the report; each phase is a file of bench/compare/ (semantic.ts, scale.ts),
 * beside the command line (options.ts) and what both do on the cluster (cluster.ts).
 */
import { join } from "node:path";
import { ControlPlane } from "../testenv/controlplane.ts";
import { installBase } from "../testenv/shared.ts";
import { Proc } from "./kit/process.ts";
import { AuditTail, countBy } from "./kit/audit.ts";
import { colorOf, lineChart } from "./charts.ts";
import type { Timeline } from "./timeline.ts";
import { mdTable, resourceOf } from "./compare_lib.ts";
import {
  contenders,
  denoFlags,
  denoMain,
  goBinary,
  interval,
  limits,
  log,
  scaleK,
  scaleN,
  seconds,
  values,
} from "./compare/options.ts";
import { deleteRun, discover } from "./compare/cluster.ts";
import { runSemantic, semanticReport, type SemanticRun } from "./compare/semantic.ts";
import { runScale, scaleReport, type ScaleRun } from "./compare/scale.ts";

// ---------------------------------------------------------------------------------------------------------------
// Main

const tStart = performance.now();
const loadavg = async () => (await Deno.readTextFile("/proc/loadavg").catch(() => "")).split(" ").slice(0, 3).join(" ");
const loadAtStart = await loadavg();
const out = values.out ?? await Deno.makeTempDir({ prefix: "espejo-compare-" });
await Deno.mkdir(out, { recursive: true });
const work = await Deno.makeTempDir({ prefix: "espejo-compare-work-" });
log(`output in ${out}`);

let cp: ControlPlane | undefined;
const cleanup = async () => {
  for (const p of Proc.running) p.kill();
  await cp?.stop();
  await Deno.remove(work, { recursive: true }).catch(() => {});
};
Deno.addSignalListener("SIGINT", async () => {
  log("interrupted; cleaning up");
  await cleanup();
  Deno.exit(130);
});

let report = "";
try {
  cp = await ControlPlane.start({ audit: true, log: (l) => log(l) });
  await installBase(cp.client());
  const admin = cp.client();
  const audit = new AuditTail(cp.auditLogPath);
  const resources = await discover(admin);

  const semantic: SemanticRun[] = [];
  for (const c of contenders) {
    const run = await runSemantic(c, cp, admin, audit, resources, work, out);
    semantic.push(run);
    for (const [i, chk] of run.checkpoints.entries()) {
      await Deno.writeTextFile(
        join(out, `${c.id}-checkpoint${i + 1}.json`),
        JSON.stringify(Object.fromEntries(chk.snapshot.objects), null, 2),
      );
    }
    await deleteRun(admin, c.semanticPrefix);
  }
  const scale: ScaleRun[] = [];
  if (scaleN > 0 && scaleK > 0) {
    for (const c of contenders) {
      scale.push(await runScale(c, cp, admin, audit, work, out));
      await deleteRun(admin, c.scalePrefix);
    }
  }
  admin.close();

  const [go, deno] = semantic;
  report = [
    "# espejo (Deno) vs the Go espejo\n",
    mdTable(["", ""], [
      ["command", `deno task compare ${Deno.args.join(" ")}`],
      ["date", new Date().toISOString()],
      ["Go espejo", `${goBinary}`],
      ["espejo (Deno)", `deno ${Deno.version.deno} run ${denoFlags.join(" ")} ${denoMain}`],
      [
        "flags of both",
        `--reconcile-interval=${interval} --metrics-addr=127.0.0.1:<free port>; WATCH_NAMESPACE=<P>-cfg`,
      ],
      ["identity of both", "a ServiceAccount in <P>-cfg bound to cluster-admin"],
      ["CPUs; load average at start / end", `${navigator.hardwareConcurrency}; ${loadAtStart} / ${await loadavg()}`],
      ["run time", seconds(performance.now() - tStart)],
      ["snapshots and logs", out],
    ], 2000),
    "",
    semanticReport(go, deno),
    scale.length === 2 ? `\n${scaleReport(scale[0], scale[1])}` : "",
    "",
  ].join("\n");
  await Deno.writeTextFile(join(out, "report.md"), report);
  if (scale.length === 2) {
    const series = (get: (t: Timeline) => [number, number][]) =>
      scale.map((r, i) => ({ label: r.contender.title, color: colorOf(i), points: get(r.timeline) }));
    const what = `${scaleN} namespaces x ${scaleK} items${limits ? ", under 100Mi/300m" : ""}`;
    await Deno.writeTextFile(
      join(out, "compare-requests.svg"),
      lineChart(
        `API requests per second, a new workload of ${what}`,
        "seconds since start",
        "requests / s",
        series((t) => t.requests),
      ),
    );
    await Deno.writeTextFile(
      join(out, "compare-memory.svg"),
      lineChart(`Resident memory, a new workload of ${what}`, "seconds since start", "MiB", series((t) => t.memoryMiB)),
    );
  }
  await Deno.writeTextFile(
    join(out, "requests.json"),
    JSON.stringify(
      {
        semantic: semantic.map((r) => ({
          controller: r.contender.id,
          checkpoints: r.checkpoints.map((c) => countBy(c.requests, (e) => `${e.verb} ${resourceOf(e)}`)),
          steady: countBy(r.steadyRequests, (e) => `${e.verb} ${resourceOf(e)}`),
        })),
        scale: scale.map((r) => ({
          controller: r.contender.id,
          converging: countBy(r.requests, (e) => `${e.verb} ${resourceOf(e)}`),
          steady: countBy(r.steadyRequests, (e) => `${e.verb} ${resourceOf(e)}`),
        })),
      },
      null,
      2,
    ),
  );
} finally {
  await cleanup();
}
console.log(report);
log(`done in ${seconds(performance.now() - tStart)}; report in ${join(out, "report.md")}`);
Deno.exit(0);
