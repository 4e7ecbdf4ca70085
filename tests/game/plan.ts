/**
 * A seed's game: how many moves, which move against which target, and the pause after each, all drawn from the
 * seed. A step's own generator is derived from (seed, step index), so a game that leaves some steps out (pending
 * fixes, see pending_fixes.ts) plays the other steps exactly as the full game does.
 */
import { type Move, MOVES, type Target } from "./moves.ts";
import { Rng } from "./rng.ts";

export interface Step {
  index: number;
  move: Move;
  target: Target;
  /** The fix this step needs (Move.needs), if any. */
  needs?: string;
  /** The pause after the move: part of the game (espejo may or may not act in between), not a synchronisation. */
  pauseMs: number;
  /** The generator the move plays with. */
  rng: Rng;
}

export const MIN_MOVES = 8;
export const MAX_MOVES = 15;

export function planGame(seed: number, intervalMs: number): Step[] {
  const count = Rng.derive(seed, -1).int(MIN_MOVES, MAX_MOVES);
  return Array.from({ length: count }, (_, index) => {
    const rng = Rng.derive(seed, index);
    const move = rng.pick(MOVES);
    const target = rng.pick(move.targets);
    // Mostly short pauses (espejo's watch is faster than them), sometimes one longer than an interval.
    const pauseMs = rng.chance(0.2) ? rng.int(intervalMs, 2 * intervalMs) : rng.int(0, 1200);
    return { index, move, target, needs: move.needs?.(target), pauseMs, rng };
  });
}

/** The steps that do not need any of `pending`. */
export function playable(steps: readonly Step[], pending: readonly string[]): Step[] {
  return steps.filter((s) => s.needs === undefined || !pending.includes(s.needs));
}

export function describeStep(s: Step): string {
  return `#${s.index} ${s.move.name} ${s.target}${s.needs ? ` [needs ${s.needs}]` : ""}, pause ${s.pauseMs} ms`;
}
