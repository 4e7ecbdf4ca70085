/**
 * Namespaces whose labels were trimmed to the keys SyncConfigs read (lib/model/namespace_info.ts) before a SyncConfig
 * that reads another key was compiled: their selection is unknown (Registry.labelsKnown), so nothing is written,
 * pruned or uncounted there, until each is read again (one GET) with the keys of now. Only namespaces with more than
 * MAX_KEPT_LABELS of labels are ever trimmed, so this costs one GET per such namespace when a SyncConfig brings a new
 * key (and after a restart, whose namespaces may be listed before any SyncConfig is compiled).
 *
 * Two ways in: a SyncConfig's work item reads every stale namespace before it queues what it selects ({@link refresh}),
 * and a unit that finds its namespace stale asks for that one ({@link readSoon}): a copy that went stale again (a
 * relist that kept it at the same version) or whose read failed is healed by the next unit of it (an interval pass
 * queues it). A failed read is logged and never fails the SyncConfig's work: its other namespaces are known.
 */
import { getLogger } from "@logtape/logtape";
import type { KubeClient } from "../kube/client.ts";
import { isNotFound } from "../kube/errors.ts";
import type { Reflector } from "../kube/reflector.ts";
import type { NamespaceInfo } from "../model/namespace_info.ts";
import type { Registry } from "../model/registry.ts";

const log = getLogger(["espejo", "controller"]);

export class TrimmedLabels {
  /** Reads under way, by namespace: a second ask waits for the first. */
  readonly #reading = new Map<string, Promise<void>>();

  constructor(
    private readonly client: KubeClient,
    private readonly namespaces: Pick<Reflector<NamespaceInfo>, "values" | "upsert" | "get">,
    private readonly registry: Pick<Registry<NamespaceInfo>, "labelsKnown">,
    /** A namespace read again: it is queued (its selection is known now). */
    private readonly reread: (name: string) => void,
  ) {}

  /** Reads every namespace whose labels are not known again, one after the other. */
  async refresh(): Promise<void> {
    const stale = [...this.namespaces.values()].filter((ns) => !this.registry.labelsKnown(ns)).map((ns) => ns.name);
    for (const name of stale) await this.readSoon(name);
  }

  /** Reads namespace `name` again unless a read of it is under way (then waits for that one). */
  readSoon(name: string): Promise<void> {
    let reading = this.#reading.get(name);
    if (!reading) {
      reading = this.#read(name).finally(() => this.#reading.delete(name));
      this.#reading.set(name, reading);
    }
    return reading;
  }

  async #read(name: string): Promise<void> {
    try {
      this.namespaces.upsert(
        await this.client.request<object>({ method: "GET", path: `/api/v1/namespaces/${encodeURIComponent(name)}` }),
      );
      const ns = this.namespaces.get(name);
      if (ns && this.registry.labelsKnown(ns)) this.reread(name);
    } catch (e) {
      if (isNotFound(e)) return; // its watch event removes it
      log.warn(
        "Cannot read namespace {namespace} again for the label keys SyncConfigs read, so it is not synced until a " +
          "later unit of it reads it: {error}",
        { namespace: name, error: e instanceof Error ? e.message : String(e) },
      );
    }
  }
}
