/** The command line of `deno task compare`, checked, and the two contenders it runs. */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { repoRoot } from "../../testenv/build.ts";
import { espejoPermissions, shippedFlags } from "../../testenv/permissions.ts";
import { parseGoDuration } from "../../lib/app/duration.ts";
import { onPurposeBullets } from "../compare_lib.ts";

const USAGE = `usage: deno task compare --go-espejo PATH [--interval 2s] [--namespaces 300] [--items 12]
  [--memory-limit 100M] [--cpu-quota-us 30000] [--cpu-period-us 100000] [--no-limits]
  [--converge-timeout 240] [--scale-timeout 1800] [--steady 10] [--out DIR] [--deno-main PATH]
--deno-main runs another checkout's main.ts as espejo (Deno) (default: this repository's).`;

export const { values } = parseArgs({
  args: Deno.args,
  options: {
    "go-espejo": { type: "string" },
    interval: { type: "string", default: "2s" },
    namespaces: { type: "string", default: "300" },
    items: { type: "string", default: "12" },
    "memory-limit": { type: "string", default: "100M" },
    "cpu-quota-us": { type: "string", default: "30000" },
    "cpu-period-us": { type: "string", default: "100000" },
    "no-limits": { type: "boolean", default: false },
    "converge-timeout": { type: "string", default: "240" },
    "scale-timeout": { type: "string", default: "1800" },
    steady: { type: "string", default: "10" },
    out: { type: "string" },
    "deno-main": { type: "string" },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (values.help || !values["go-espejo"]) {
  console.error(USAGE);
  Deno.exit(values.help ? 0 : 2);
}
export const goBinary = values["go-espejo"]!;
export const interval = values.interval!;
export const intervalMs = parseGoDuration(interval);
export const scaleN = Number(values.namespaces);
export const scaleK = Number(values.items);
export const memoryLimit = values["memory-limit"]!;
export const cpuQuota = Number(values["cpu-quota-us"]);
export const cpuPeriod = Number(values["cpu-period-us"]);
export const limits = !values["no-limits"];
export const convergeTimeoutMs = Number(values["converge-timeout"]) * 1000;
export const scaleTimeoutMs = Number(values["scale-timeout"]) * 1000;
export const steadyMs = Number(values.steady) * 1000;
export const denoMain = values["deno-main"] ?? join(repoRoot, "main.ts");
/**
 * The shipped runtime flags (permissions, V8 flags); another checkout's main.ts (--deno-main) runs with its own
 * deno.permissions and deno.v8-flags where it has them (older checkouts compiled with --optimize-for-size).
 */
function readShippedFlags(): string[] {
  if (!values["deno-main"]) return shippedFlags();
  const lines = (file: string) => {
    const path = join(dirname(denoMain), file);
    return existsSync(path) ? Deno.readTextFileSync(path).split("\n").map((l) => l.trim()).filter(Boolean) : undefined;
  };
  return [
    ...(lines("deno.permissions") ?? espejoPermissions()),
    ...(lines("deno.v8-flags") ?? ["--v8-flags=--optimize-for-size"]),
  ];
}
export const denoFlags = readShippedFlags();
/** docs/migration.md's "Different, on purpose" list, which the report's labels are checked against (--deno-main's). */
export const migrationPath = values["deno-main"] && existsSync(join(dirname(denoMain), "docs", "migration.md"))
  ? join(dirname(denoMain), "docs", "migration.md")
  : join(repoRoot, "docs", "migration.md");
export const onPurpose = onPurposeBullets(await Deno.readTextFile(migrationPath));
for (const [name, v] of Object.entries({ scaleN, scaleK, cpuQuota, cpuPeriod, convergeTimeoutMs, steadyMs })) {
  if (!Number.isFinite(v) || v < 0) {
    console.error(`compare: bad value for ${name}\n${USAGE}`);
    Deno.exit(2);
  }
}
await Deno.stat(goBinary).catch(() => {
  console.error(`compare: ${goBinary} does not exist`);
  Deno.exit(2);
});

export const log = (s: string) => console.error(`compare: ${s}`);
export const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

type Id = "go" | "deno";
export interface Contender {
  id: Id;
  title: string;
  semanticPrefix: string;
  scalePrefix: string;
  /** argv without the executable; `exe` is prepended (a private copy under limits, see `privateCopy`). */
  args: (ports: { metrics: number; health: number }) => string[];
  exe: string;
  /** Working directory: Deno finds deno.json (imports) from there. */
  cwd?: string;
}
export const contenders: Contender[] = [
  {
    id: "go",
    title: "Go espejo",
    semanticPrefix: "cmpgo",
    scalePrefix: "sclgo",
    exe: goBinary,
    args: (p) => [`--reconcile-interval=${interval}`, `--metrics-addr=127.0.0.1:${p.metrics}`],
  },
  {
    id: "deno",
    title: "espejo (Deno)",
    semanticPrefix: "cmpdeno",
    scalePrefix: "scldeno",
    exe: Deno.execPath(),
    cwd: dirname(denoMain),
    args: (p) => [
      "run",
      // The shipped flags (deno.permissions and deno.v8-flags, as the Dockerfile compiles it), nothing more: both
      // controllers only need to reach the API server and serve metrics; a permission main.ts lacks in the image fails
      // here too.
      ...denoFlags,
      denoMain,
      `--reconcile-interval=${interval}`,
      `--metrics-addr=127.0.0.1:${p.metrics}`,
      `--health-addr=127.0.0.1:${p.health}`,
    ],
  },
];
