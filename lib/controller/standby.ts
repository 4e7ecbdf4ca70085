/**
 * Whether this replica leads, and what it holds back until it does. A replica that does not hold the Lease (leader
 * election, lib/kube/leader.ts) is a hot standby: it keeps the namespace and SyncConfig caches, compiles the
 * SyncConfigs and fills the caches of every kind their items name (warm_caches.ts), judging objects as they arrive,
 * so that when it takes the Lease its units find everything cached and judged: no relist, no read of an object. It
 * writes nothing meanwhile (standby_client.ts refuses it): no unit, no status, no Event, no prune, no read of a
 * trimmed namespace.
 *
 * What it holds back: the Events a SyncConfig's compile emits (a templated deleteItem's warning; sent when it leads,
 * as a leader that compiled it then would), and the namespaces in which something changed meanwhile, which are
 * queued first when it leads, the latest change first (a tenant's deletion during the failover is most likely there).
 */
import type { EventRecorder } from "../kube/events.ts";

type Emit = EventRecorder["emit"];

/** Events held back at most (one per SyncConfig and generation at most: a flood of them keeps the latest). */
const MAX_HELD_EVENTS = 256;

export class Standby {
  #leading = false;
  /** Set once the caches are synced: from then on a namespace's change is one a unit must see. */
  #watching = false;
  readonly #events: Parameters<Emit>[] = [];
  /** Namespaces that changed while standing by, the latest change last. At most one entry per namespace. */
  readonly #changed = new Set<string>();

  constructor(private readonly recorder: Pick<EventRecorder, "emit">) {}

  /** Whether this replica leads (or runs without leader election) and its writers run. */
  get leading(): boolean {
    return this.#leading;
  }

  /** The Event recorder of a SyncConfig's compile: while standing by, its Events wait until this replica leads. */
  readonly events: Pick<EventRecorder, "emit"> = {
    emit: (...args: Parameters<Emit>) => {
      if (this.#leading) return this.recorder.emit(...args);
      this.#events.push(args);
      if (this.#events.length > MAX_HELD_EVENTS) this.#events.shift();
      return Promise.resolve();
    },
  };

  /** The namespace and SyncConfig caches are synced: changes seen from now on are kept for when it leads. */
  watch(): void {
    this.#watching = true;
  }

  /**
   * Something a unit of `namespace` reads changed. True while standing by: it is kept (queued when this replica
   * leads) and must not be queued now.
   */
  held(namespace: string): boolean {
    if (this.#leading) return false;
    if (this.#watching) {
      this.#changed.delete(namespace); // the latest change goes last
      this.#changed.add(namespace);
    }
    return true;
  }

  /**
   * This replica leads from now on: the Events held back are sent, and the namespaces that changed meanwhile are
   * returned, the latest change first, to be queued before anything else.
   */
  lead(): string[] {
    this.#leading = true;
    for (const args of this.#events.splice(0)) void this.recorder.emit(...args);
    const changed = [...this.#changed].reverse();
    this.#changed.clear();
    return changed;
  }
}
