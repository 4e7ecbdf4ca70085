/**
 * One lifecycle for per-key state. Every book that keeps something per namespace or per SyncConfig (retries,
 * counts, freshness, selection, status writes, Events, gauges) registers here once, with how it forgets; a
 * namespace or a SyncConfig that goes is then one call that every book hears, as client-go's `Forget` and an
 * informer's `Store.Delete` are. A book that is not registered leaks, which tests/unit/key_books_test.ts guards.
 */
import type { EventRecorder } from "../kube/events.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { Executor } from "../sync/executor.ts";
import type { DelegatedView } from "../sync/delegated_view.ts";
import type { LargeGate } from "../sync/large_gate.ts";
import type { ResourceCaches } from "../sync/resource_caches.ts";
import type { Freshness } from "./freshness.ts";
import type { Registry } from "../model/registry.ts";
import type { StatusLedger } from "./status_ledger.ts";
import type { StatusWriter } from "./status_writer.ts";
import type { SyncEvents } from "./sync_events.ts";
import type { NamespaceInfo } from "../model/namespace_info.ts";
import type { WorkQueue } from "./queue.ts";
import { configWorkKeys, type Trigger, workKey } from "./work_items.ts";

/** How one book forgets; a book keyed by one kind of key only has that one. */
export interface Forgets {
  namespace?(name: string): void;
  config?(cfgKey: string): void;
}

export class KeyBooks {
  readonly #books = new Map<string, Forgets>();

  /** Registers the book `name` (once: a second registration under one name is a wiring mistake). */
  register(name: string, book: Forgets): void {
    if (this.#books.has(name)) throw new Error(`book ${name} is registered twice`);
    this.#books.set(name, book);
  }

  /** The namespace went: every book forgets it. */
  namespaceGone(name: string): void {
    for (const book of this.#books.values()) book.namespace?.(name);
  }

  /** The SyncConfig went: every book forgets it. */
  configGone(cfgKey: string): void {
    for (const book of this.#books.values()) book.config?.(cfgKey);
  }

  /** The registered books, by what they forget (for tests). */
  names(): { namespace: string[]; config: string[] } {
    const all = [...this.#books];
    return {
      namespace: all.filter(([, b]) => b.namespace).map(([n]) => n),
      config: all.filter(([, b]) => b.config).map(([n]) => n),
    };
  }
}

/** The controller's books of per-key state (see {@link registerBooks}). */
export interface ControllerBooks {
  freshness: Pick<Freshness, "forget">;
  selection: Pick<Registry<NamespaceInfo>, "forgetNamespace">;
  ledger: Pick<StatusLedger, "forgetNamespace" | "drop">;
  statusWriter: Pick<StatusWriter, "heard" | "forgetConfig">;
  syncEvents: Pick<SyncEvents, "forget">;
  /** The Events remembered for aggregation, and the spam filter's tokens, per SyncConfig. */
  events: Pick<EventRecorder, "forget">;
  /** ConfigChanges, by shape: it holds the book, and names this file (no import back). */
  configs: { forgetConfig(cfgKey: string): void };
  /** The work queue's failures in a row, of every kind of work. */
  queue: Pick<WorkQueue<string, Trigger>, "forget">;
  executor: Pick<Executor, "forgetNamespace" | "forgetConfig">;
  view: Pick<DelegatedView, "forgetConfig">;
  /** Namespaces in line for the turn at large objects. */
  large: Pick<LargeGate, "forget">;
  caches: Pick<ResourceCaches, "forgetNamespace">;
  metrics: Pick<Metrics, "items" | "invalid" | "delegatedRequests">;
}

/** Registers every book of the controller, in one place. */
export function registerBooks(books: KeyBooks, b: ControllerBooks): void {
  books.register("freshness", { namespace: (ns) => b.freshness.forget(ns) });
  books.register("selection", { namespace: (ns) => b.selection.forgetNamespace(ns) });
  books.register("status ledger", {
    // The counts of the SyncConfigs that counted it change: their statuses are written again.
    namespace: (ns) =>
      b.ledger.forgetNamespace(ns).forEach((cfgKey) => b.statusWriter.heard({ kind: "changed", cfgKey })),
    config: (k) => b.ledger.drop(k),
  });
  books.register("status writer", {
    namespace: (ns) => b.statusWriter.heard({ kind: "finished", namespace: ns }),
    config: (k) => b.statusWriter.forgetConfig(k),
  });
  books.register("sync events", { config: (k) => b.syncEvents.forget(k) });
  books.register("held Events", { config: (k) => b.events.forget(k) });
  books.register("templated deleteItems warnings", { config: (k) => b.configs.forgetConfig(k) });
  books.register("work retries", {
    namespace: (ns) => b.queue.forget(workKey({ kind: "namespace", name: ns })),
    config: (k) => configWorkKeys(k).forEach((key) => b.queue.forget(key)),
  });
  books.register("item retries and what the server adds", {
    namespace: (ns) => b.executor.forgetNamespace(ns),
    config: (k) => b.executor.forgetConfig(k),
  });
  books.register("rights of untrusted SyncConfigs", { config: (k) => b.view.forgetConfig(k) });
  books.register("turns at large objects", { namespace: (ns) => b.large.forget(ns) });
  // A SyncConfig being deleted "goes" here while pruning still needs what it created: pruning unindexes it once it
  // is gone for good or prunes no more (PruneFinalizer.settle).
  books.register("created index", { namespace: (ns) => b.caches.forgetNamespace(ns) });
  books.register("item gauges and delegated request counts", {
    config: (syncconfig) => {
      for (const state of ["synchronized", "deleted", "failed"]) b.metrics.items.remove({ syncconfig, state });
      b.metrics.invalid.remove({ syncconfig });
      b.metrics.delegatedRequests.removeMatching({ syncconfig });
    },
  });
}
