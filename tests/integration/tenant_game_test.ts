/**
 * The tenant game (tests/game/, docs/tenant-game.md) on a fixed seed set: seeded random sequences of a hostile
 * tenant's moves against the real API server, then the invariant — every synced object as its SyncConfig wants it
 * (or a specific failure reported), pruned where pruning says so, espejo's requests within budget, the controller
 * alive. Steps that need a fix in PENDING_FIXES are left out; remove an entry when its fix merges, and these games
 * play those steps too. The seeds were chosen to cover every move, and each pending fix at least once.
 */
import assert from "node:assert/strict";
import { testCluster } from "../../testenv/shared.ts";
import { describeResult, playGame } from "../game/game.ts";
import { PENDING_FIXES } from "../game/pending_fixes.ts";
import { planGame } from "../game/plan.ts";
import { MOVES } from "../game/moves.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const INTERVAL_MS = 3000;
/** Every move (and so every pending fix) and a relabel; about 25 s a game on an idle machine. */
export const CI_SEEDS = [547, 552, 127];

Deno.test("Tenant game seeds cover every move and every pending fix", () => {
  const steps = CI_SEEDS.flatMap((seed) => planGame(seed, INTERVAL_MS));
  const moves = new Set(steps.map((s) => s.move.name));
  const needs = new Set(steps.flatMap((s) => s.needs ? [s.needs] : []));
  for (const fix of PENDING_FIXES) assert.ok(needs.has(fix), `a CI seed plays a step that needs ${fix}`);
  assert.equal(moves.size, MOVES.length, `every move is played: ${[...moves].join(", ")}`);
});

for (const seed of CI_SEEDS) {
  Deno.test(`Tenant game seed ${seed}: espejo restores or reports every object, within budget`, opts, async () => {
    const cluster = await testCluster();
    const r = await playGame(cluster, seed, { intervalMs: INTERVAL_MS, pending: PENDING_FIXES });
    assert.ok(r.ok, describeResult(r));
  });
}
