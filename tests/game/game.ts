/**
 * One game: a fresh world, the seed's moves (less those waiting for a pending fix), then the invariant, espejo's
 * request budget and its liveness. The result carries everything a failing seed's report needs: the moves as played,
 * what is wrong, and espejo's requests.
 */
import type { TestCluster } from "../../testenv/shared.ts";
import { auditNow, requestsBy } from "../../testenv/harness.ts";
import { awaitInvariant, type Violation } from "./invariant.ts";
import { describeStep, planGame, playable } from "./plan.ts";
import { createWorld, destroyWorld } from "./world.ts";

/**
 * espejo's request budget: at most {@link REQUESTS_PER_MOVE} per move played plus {@link REQUESTS_BASE}, counted
 * from the first move until the invariant holds (every verb but watch, status and Events included). A move costs
 * espejo a restore (a PUT or a create, a GET and a second PUT on a conflict), a status patch of each SyncConfig and an
 * Event or two; a burst or a flapping label asks for a few restores, with back-off, not one per write. The base pays
 * for the status and Events of the settling after the last move.
 */
export const REQUESTS_PER_MOVE = 12;
export const REQUESTS_BASE = 20;

export interface GameOptions {
  intervalMs: number;
  /** Fixes not merged yet: steps that need one are left out (pending_fixes.ts). */
  pending: readonly string[];
  log?: (line: string) => void;
}

export interface GameResult {
  seed: number;
  ok: boolean;
  moves: string[];
  skipped: string[];
  violations: Violation[];
  /** Reported failures the invariant accepted. */
  accepted: string[];
  requests: number;
  budget: number;
  requestsByVerb: Record<string, number>;
  alive: boolean;
  settleMs: number;
  durationMs: number;
  /** A problem of the game itself (setup, a refused request), not of espejo. */
  error?: string;
}

export async function playGame(cluster: TestCluster, seed: number, opts: GameOptions): Promise<GameResult> {
  const log = opts.log ?? (() => {});
  const started = Date.now();
  const steps = planGame(seed, opts.intervalMs);
  const played = playable(steps, opts.pending);
  const skipped = steps.filter((s) => !played.includes(s)).map(describeStep);
  const world = await createWorld(cluster, opts.intervalMs);
  const result: GameResult = {
    seed,
    ok: false,
    moves: [],
    skipped,
    violations: [],
    accepted: [],
    requests: 0,
    budget: REQUESTS_PER_MOVE * played.length + REQUESTS_BASE,
    requestsByVerb: {},
    alive: false,
    settleMs: 0,
    durationMs: 0,
  };
  try {
    const since = auditNow();
    for (const step of played) {
      const words = await step.move.play(step.rng, world, step.target);
      const line = `#${step.index} ${step.move.name} ${words}; pause ${step.pauseMs} ms`;
      result.moves.push(line);
      log(`  seed ${seed} ${line}`);
      await new Promise((r) => setTimeout(r, step.pauseMs));
    }
    const seen = await awaitInvariant(world);
    result.violations = seen.violations;
    result.accepted = seen.accepted;
    result.settleMs = seen.elapsedMs;
    const requests = await requestsBy(cluster, world.controller.identity, since);
    result.requests = requests.length;
    for (const e of requests) {
      const key = `${e.verb} ${e.objectRef?.resource ?? "?"}${
        e.objectRef?.subresource ? "/" + e.objectRef.subresource : ""
      }`;
      result.requestsByVerb[key] = (result.requestsByVerb[key] ?? 0) + 1;
    }
    result.alive = world.controller.controller.ready;
    result.ok = result.violations.length === 0 && result.requests <= result.budget && result.alive;
  } catch (e) {
    result.error = e instanceof Error ? e.stack ?? e.message : String(e);
  } finally {
    result.durationMs = Date.now() - started;
    await destroyWorld(world);
  }
  return result;
}

/** The result as a failing seed's report: how to replay it, the moves, and what went wrong. */
export function describeResult(r: GameResult): string {
  const lines = [
    `seed ${r.seed}: ${r.ok ? "ok" : "FAILED"} (${r.moves.length} moves, ${r.requests}/${r.budget} requests, ` +
    `settled in ${r.settleMs} ms, ${(r.durationMs / 1000).toFixed(1)} s)`,
    `  replay: deno task game --seed ${r.seed}`,
    ...r.moves.map((m) => `  ${m}`),
    ...r.skipped.map((s) => `  skipped ${s}`),
    ...r.violations.map((v) => `  VIOLATION ${v.item}: ${v.problem}`),
    ...r.accepted.map((a) => `  reported failure accepted: ${a}`),
  ];
  if (r.requests > r.budget) {
    lines.push(`  REQUESTS ${r.requests} > budget ${r.budget}: ${JSON.stringify(r.requestsByVerb)}`);
  }
  if (!r.alive && !r.error) lines.push("  CONTROLLER NOT READY after the game");
  if (r.error) lines.push(`  GAME ERROR ${r.error}`);
  return lines.join("\n");
}
