/**
 * `deno task game`: plays tenant games against a control plane of its own (or the one in TESTENV_*), and prints
 * every failing seed with its moves and how to replay it.
 *
 *   deno task game --seed 1234            one game (repeat --seed for more)
 *   deno task game --games 200 [--from 1] seeds 1..200
 *   --skip-pending                        leave out the steps that wait for a fix (pending_fixes.ts), as CI does
 *   --interval 3000                       the controller's reconcile interval (ms)
 *   --json results.json                   every result, for the record
 */
import { parseArgs } from "node:util";
import { testCluster } from "../../testenv/shared.ts";
import { describeResult, type GameResult, playGame } from "./game.ts";
import { PENDING_FIXES } from "./pending_fixes.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    seed: { type: "string", multiple: true },
    games: { type: "string" },
    from: { type: "string", default: "1" },
    "skip-pending": { type: "boolean", default: false },
    interval: { type: "string", default: "3000" },
    json: { type: "string" },
    verbose: { type: "boolean", default: false },
  },
});

const seeds = values.seed?.length
  ? values.seed.map(Number)
  : Array.from({ length: Number(values.games ?? 1) }, (_, i) => Number(values.from) + i);
if (seeds.some((s) => !Number.isInteger(s))) throw new Error(`seeds must be integers: ${seeds.join(", ")}`);

const cluster = await testCluster();
const results: GameResult[] = [];
const opts = {
  intervalMs: Number(values.interval),
  pending: values["skip-pending"] ? PENDING_FIXES : [],
  log: values.verbose ? (l: string) => console.log(l) : undefined,
};
try {
  for (const seed of seeds) {
    const r = await playGame(cluster, seed, opts);
    results.push(r);
    console.log(
      r.ok ? `seed ${seed}: ok (${r.moves.length} moves, ${r.requests}/${r.budget} requests)` : describeResult(r),
    );
    if (values.json) await Deno.writeTextFile(values.json, JSON.stringify(results, null, 2));
  }
} finally {
  await cluster.own?.stop();
}
const failed = results.filter((r) => !r.ok);
const moves = results.reduce((n, r) => n + r.moves.length, 0);
console.log(
  `${results.length} games, ${moves} moves, ${failed.length} failed${
    failed.length ? `: seeds ${failed.map((r) => r.seed).join(" ")}` : ""
  }`,
);
Deno.exit(failed.length ? 1 : 0);
