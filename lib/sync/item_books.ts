/**
 * What espejo remembers of its items between tries, in one place: failed attempts (retry_book.ts), fights over
 * objects (fights.ts), what the server adds to each item's writes (server_adds.ts), and the learning gate: the first
 * object of an item whose server-added fields are not explained yet is written to learn them, and the item's other
 * objects wait for that write instead of each being written (after a restart: one write per item the server extends,
 * not one per namespace). The planner reads the books through {@link ItemBooks.view}; after each try,
 * {@link ItemBooks.afterTry} records what the retry policy (retry_policy.ts) decided.
 */
import { getLogger } from "@logtape/logtape";
import type { CachedObject } from "./cached_object.ts";
import type { ItemRef } from "./executor_hooks.ts";
import type { ItemResult } from "./failures.ts";
import { FightBook } from "./fights.ts";
import type { ItemKeys, PlanView } from "./planner.ts";
import { RetryBook } from "./retry_book.ts";
import { afterTry, MAX_FIGHT_DELAY_MS, type TryOutcome } from "./retry_policy.ts";
import { ServerAdds } from "./server_adds.ts";

const log = getLogger(["espejo", "executor"]);

/** One try of an item, as the books hear of it. */
export interface Tried {
  ref: ItemRef;
  /** A deleteItem's try has no fight: nobody restores what espejo deletes. */
  keys: Pick<ItemKeys, "retryKey" | "attempt"> & { fightKey?: string };
  outcome: TryOutcome;
  /** The try wrote again what someone else changed: a move of a fight. */
  restore: boolean;
  result: ItemResult;
  /** The object as cached before the try (whose field manager a fight's log names). */
  observed?: CachedObject;
}

export class ItemBooks {
  /** Failed writes and deletes by SyncConfig, item and namespace. */
  readonly #retries = new RetryBook<ItemResult>();
  readonly #fights: FightBook;
  /** By item: what the server added to our last write of it. */
  readonly #serverAdds = new ServerAdds();
  /** Items whose first unexplained object is being written. */
  readonly #learning = new Map<string, Promise<void>>();
  /** What the planner reads of the books. */
  readonly view: Pick<PlanView, "serverAdds" | "fightWaitMs" | "inFight" | "backedOff">;

  constructor(
    private readonly maxFightDelayMs = MAX_FIGHT_DELAY_MS,
    private readonly onFight?: (cfgKey: string) => void,
  ) {
    this.#fights = new FightBook(maxFightDelayMs);
    this.view = {
      serverAdds: (itemKey) => this.#serverAdds.get(itemKey),
      fightWaitMs: (fightKey) => this.#fights.waitMs(fightKey),
      inFight: (fightKey) => this.#fights.inFight(fightKey),
      backedOff: (key, attempt) => this.#retries.waiting(key, attempt),
    };
  }

  /** The write that learns what the server adds to item `itemKey`, while it is under way. */
  learning(itemKey: string): Promise<void> | undefined {
    return this.#learning.get(itemKey);
  }

  /** `written` is the item's first unexplained write: the item's other objects wait for it (see the file comment). */
  learnFrom(itemKey: string, written: Promise<unknown>): void {
    if (this.#learning.has(itemKey)) return;
    this.#learning.set(itemKey, written.then(() => {}).finally(() => this.#learning.delete(itemKey)));
  }

  /** What the server added to a write of item `itemKey` (kept from its first write of the generation). */
  learnt(itemKey: string, extras: () => string): void {
    this.#serverAdds.learn(itemKey, extras);
  }

  /** The item's object was found in sync: a later failure backs off from the start. */
  inSync(keys: Pick<ItemKeys, "retryKey">): void {
    this.#retries.succeeded(keys.retryKey);
  }

  /** What a try tells the books, as the retry policy decides. */
  afterTry(t: Tried): void {
    const decision = afterTry({ outcome: t.outcome, restore: t.restore });
    if (decision.fightMove && t.keys.fightKey) this.#fightMove(t.keys.fightKey, t);
    if (decision.attempt === "forget") this.#retries.succeeded(t.keys.retryKey);
    else if (t.result.state === "failed") {
      const scope = { cfgKey: t.ref.cfg.key, namespace: t.ref.namespace };
      this.#retries.failed(t.keys.retryKey, t.keys.attempt, t.result, decision.attempt === "terminal", scope);
    }
  }

  /** The SyncConfig went or changed generation: its retries start over, and what its items learnt goes. */
  forgetConfig(cfgKey: string): void {
    this.#retries.forgetConfig(cfgKey);
    this.#serverAdds.forgetConfig(cfgKey);
  }

  /** The namespace went: its retries start over. */
  forgetNamespace(namespace: string): void {
    this.#retries.forgetNamespace(namespace);
  }

  /** A restore was tried (written or refused): one move of the fight over the object. */
  #fightMove(fightKey: string, { ref, observed }: Tried): void {
    const restores = this.#fights.restored(fightKey);
    if (restores < 2) return;
    this.onFight?.(ref.cfg.key);
    if (restores !== 2) return;
    log.warn(
      "Fight over {object} in namespace {namespace}: changed again by field manager {manager} after espejo " +
        "restored it for SyncConfig {syncConfig}; restores now back off up to {maxDelayMs} ms",
      {
        object: fightKey,
        namespace: ref.namespace,
        manager: observed ? observed.manager ?? "(unknown)" : "(it was deleted or unlabelled)",
        syncConfig: ref.cfg.key,
        maxDelayMs: this.maxFightDelayMs,
      },
    );
  }
}
