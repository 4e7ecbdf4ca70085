/**
 * The retry policy, as pure decisions (controller-runtime's `switch` after `Reconcile` is the model). Two levels, one
 * set of rules: after each try of one item in one namespace ({@link afterTry}: what the try tells the books of
 * retries, lib/sync/retry_book.ts, and fights, lib/sync/fights.ts, which the planner reads before the next try), and
 * after each piece of work the queue handed out ({@link afterWork}: a namespace unit, a SyncConfig's pruning
 * bookkeeping, a status write, an exception), which the queue performs (lib/controller/queue.ts `addRateLimited`,
 * `forget`, asked by lib/controller/worker.ts and lib/controller/status_writer.ts). Every retry constant is here.
 *
 * - A try that wrote or found nothing to write forgets the attempt's failures.
 * - A terminal failure holds its attempt until the attempt changes (or an hour); a transient one backs off.
 * - A restore (writing again what someone else changed) is a move of a fight, written or refused alike: a conflict
 *   (409), a refusal or an error on a restore is the other writer's move as much as a successful restore is espejo's.
 *   Its next try waits for the fight (1 s, 2 s, 4 s ... up to the reconcile interval), keyed on the object, never on
 *   its resourceVersion: a writer as fast as it can gets a few restores a minute. A transient failure of a restore
 *   is not held in the retry book as well: the fight's back-off is its back-off, one schedule, not two.
 * - What was tried is the attempt (lib/sync/planner.ts `keysOf`): a new generation or desired object is tried at once,
 *   a new live version only when it is not a restore (a restore that keeps failing stays one attempt).
 */

import { exponentialMs } from "../kube/backoff.ts";

/** What one try of an item came to. */
export type TryOutcome =
  /** Written, or the server found nothing to change. */
  | "done"
  /** 409 Conflict: the object changed since espejo read it. */
  | "conflict"
  /** Throttled, a server error, a timeout, an object still being deleted: the same try can succeed later. */
  | "transient"
  /** Cannot succeed until something changes (see lib/sync/failures.ts). */
  | "terminal";

export interface TryFacts {
  outcome: TryOutcome;
  /** The try wrote, or tried to write, what someone else had changed or removed. */
  restore: boolean;
}

export interface RetryDecision {
  /** The try is a move of the fight over the object: the next restore of it waits longer. */
  fightMove: boolean;
  /** What the retry book keeps for the attempt: nothing (its failures are forgotten), or this failure. */
  attempt: "forget" | "transient" | "terminal";
}

/** The decision after one try (see the file comment for the rules; tests/unit/retry_policy_test.ts for the table). */
export function afterTry(f: TryFacts): RetryDecision {
  if (f.outcome === "done") return { fightMove: f.restore, attempt: "forget" };
  if (f.outcome === "terminal") return { fightMove: f.restore, attempt: "terminal" };
  if (f.restore) return { fightMove: true, attempt: "forget" };
  return { fightMove: false, attempt: "transient" };
}

/*
 * Every retry constant of the controller. Each back-off doubles from its first wait with each failure in a row
 * (lib/kube/backoff.ts `exponentialMs`, the one schedule), jittered by +-20 %, up to {@link MAX_DELAY_MS}.
 */
/** The first wait of a back-off and of a fight. */
export const BASE_DELAY_MS = 1000;
/** The longest wait of a back-off (client-go's workqueue: 1000 s; a pass every 10 min checks anyway). */
export const MAX_DELAY_MS = 300_000;
/** How long a terminal failure holds its attempt when nothing changes (an RBAC fix espejo cannot see). */
export const TERMINAL_HOLD_MS = 3_600_000;
/** The longest wait of a fight when no reconcile interval is set (with one, the interval). */
export const MAX_FIGHT_DELAY_MS = 600_000;
/** The first wait after a status write failed. */
export const STATUS_RETRY_BASE_MS = 2_000;
/** The first wait between two looks at a deleted SyncConfig whose objects are not all gone yet. */
export const PRUNE_RELOOK_BASE_MS = 5_000;
/** How soon a unit comes back while a cache it must prune from is still listing. */
export const LISTING_RECHECK_MS = 5_000;
/** The first wait after a finalizer update met a conflict (mostly espejo's own status write in between). */
export const FINALIZER_CONFLICT_BASE_MS = 1_000;
/** The first wait after a finalizer update failed otherwise. */
export const FINALIZER_FAILURE_BASE_MS = 10_000;
/** How soon a standby looks again at the kinds whose discovery failed (not: was not served), until it leads. */
export const WARM_DISCOVERY_RETRY_MS = 10_000;

/** How long the next restore of an object waits after the `moves`-th move of its fight (0 moves: none). */
export function fightDelayMs(moves: number, maxMs: number): number {
  return exponentialMs(moves, BASE_DELAY_MS, maxMs);
}

/** What a piece of work the queue handed out asks of it afterwards. */
export interface WorkFacts {
  /** A transient failure (or a look that must be repeated): back off. */
  retry: boolean;
  /** Come back after this long in any case (a fight's hold, a cache still listing, labels settling). */
  retryInMs?: number;
  /** The first wait of the back-off, when not {@link BASE_DELAY_MS}. */
  baseMs?: number;
}

/** What the queue does with a key after its work. */
export type Requeue =
  /** Done, or failed terminally: its failures are forgotten; a change or a pass brings it back. */
  | { kind: "forget" }
  /** Done, and back after `ms` in any case. */
  | { kind: "after"; ms: number }
  /** Failed transiently: back after `baseMs`, doubling with each failure in a row, at most `capMs` (if asked). */
  | { kind: "backoff"; baseMs: number; capMs?: number };

/** The decision after one piece of work (tests/unit/retry_policy_test.ts has the table). */
export function afterWork(w: WorkFacts): Requeue {
  if (w.retry) {
    const cap = w.retryInMs === undefined ? {} : { capMs: w.retryInMs };
    return { kind: "backoff", baseMs: w.baseMs ?? BASE_DELAY_MS, ...cap };
  }
  return w.retryInMs === undefined ? { kind: "forget" } : { kind: "after", ms: w.retryInMs };
}
