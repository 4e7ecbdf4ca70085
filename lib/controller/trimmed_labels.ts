/**
 * Namespaces whose labels were trimmed to the keys SyncConfigs read (lib/model/namespace_info.ts) before a SyncConfig
 * that reads another key was compiled: their selection is unknown (Registry.labelsKnown), so nothing is written,
 * pruned or uncounted there, until each is read again (one GET) with the keys of now. Only namespaces with more than
 * MAX_KEPT_LABELS of labels are ever trimmed, so this costs one GET per such namespace when a SyncConfig brings a new
 * key (and after a restart, whose namespaces may be listed before any SyncConfig is compiled).
 */
import { getLogger } from "@logtape/logtape";
import type { KubeClient } from "../kube/client.ts";
import { isNotFound } from "../kube/errors.ts";
import type { Reflector } from "../kube/reflector.ts";
import type { NamespaceInfo } from "../model/namespace_info.ts";
import type { Registry } from "../model/registry.ts";

const log = getLogger(["espejo", "controller"]);

export class TrimmedLabels {
  /** A refresh under way: the SyncConfigs that wait for it share it. */
  #running?: Promise<void>;

  constructor(
    private readonly client: KubeClient,
    private readonly namespaces: Pick<Reflector<NamespaceInfo>, "values" | "upsert" | "get">,
    private readonly registry: Pick<Registry<NamespaceInfo>, "labelsKnown">,
    /** A namespace read again: it is queued (its selection is known now). */
    private readonly reread: (name: string) => void,
  ) {}

  /**
   * Reads every namespace whose labels are not known again; throws the first failure (after trying all of them), so
   * that the SyncConfig's work item is retried.
   */
  async refresh(): Promise<void> {
    while (this.#running) await this.#running;
    const stale = [...this.namespaces.values()].filter((ns) => !this.registry.labelsKnown(ns)).map((ns) => ns.name);
    if (!stale.length) return;
    this.#running = this.#read(stale).finally(() => (this.#running = undefined));
    await this.#running;
  }

  async #read(names: string[]): Promise<void> {
    let failure: unknown;
    for (const name of names) {
      try {
        this.namespaces.upsert(
          await this.client.request<object>({ method: "GET", path: `/api/v1/namespaces/${encodeURIComponent(name)}` }),
        );
        const ns = this.namespaces.get(name);
        if (ns && this.registry.labelsKnown(ns)) this.reread(name);
      } catch (e) {
        if (isNotFound(e)) continue; // its watch event removes it
        log.warn("Cannot read namespace {namespace} again for the label keys SyncConfigs read: {error}", {
          namespace: name,
          error: e instanceof Error ? e.message : String(e),
        });
        failure ??= e;
      }
    }
    if (failure !== undefined) throw failure;
  }
}
