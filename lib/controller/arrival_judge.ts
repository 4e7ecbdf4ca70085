/**
 * Judges a managed object as its cache reads it in its initial state (lib/sync/judged_on_arrival.ts), so that its
 * content is not kept until a unit gets to its namespace: after a restart every object espejo manages arrives at
 * once (100,000 of them, 50 MB of JSON), and units take minutes to get through them. The verdict is the one the
 * unit would reach (lib/sync/verdict.ts), made without what the executor learnt since the start about what the
 * server adds to each item: an object whose only differences are fields its item does not set keeps a record of
 * hashes, which the unit decides with what it learnt. It is judged from the object as the stream parsed it, before
 * anything of it is kept.
 * An object that no one SyncConfig's item names here (none, or several: a conflict the unit reports), or that the
 * judge cannot judge, is left to the unit, content and all (within MAX_KEPT_CONTENT).
 */
import { getLogger } from "@logtape/logtape";
import { type KubeObject, splitApiVersion } from "../kube/objects.ts";
import type { ResourceInfo } from "../kube/discovery.ts";
import { renderTemplate } from "../model/template.ts";
import type { CachedObject } from "../sync/cached_object.ts";
import { desiredObjectNow } from "../sync/desired.ts";
import { assess, remember } from "../sync/verdict.ts";
import type { Registry } from "../model/registry.ts";
import type { NamespaceInfo } from "../model/namespace_info.ts";
import type { NamespaceLookup } from "./watches.ts";

const log = getLogger(["espejo", "controller"]);

export function arrivalJudge(
  registry: Registry<NamespaceInfo>,
  namespaces: NamespaceLookup,
): (r: ResourceInfo, entry: CachedObject, namespace: string, name: string, content: KubeObject) => boolean {
  return (r, entry, namespace, name, content) => {
    const ns = namespaces.get(namespace);
    const owners = registry.itemOwners(r, ns, name);
    if (owners.length !== 1) return false;
    const compiled = registry.get(owners[0])?.result;
    if (!compiled?.ok) return false;
    const cfg = compiled.config;
    const item = cfg.syncItems.find((i) =>
      !i.problem && i.kind === r.kind && splitApiVersion(i.apiVersion).group === r.group &&
      renderTemplate(i.name, namespace) === name
    );
    if (!item) return false;
    try {
      const { object, hash } = desiredObjectNow(cfg, item, namespace);
      const { memo } = assess(object, hash, entry, undefined, content);
      remember(entry, memo);
      return memo !== undefined;
    } catch (e) {
      // Thrown here, it would fail the cache's whole list, again at every retry: the unit judges it, and fails alone.
      log.warn("Could not judge {kind} {namespace}/{name} as it arrived, left to its namespace's sync: {error}", {
        kind: r.kind,
        namespace,
        name,
        error: e instanceof Error ? e.message : String(e),
      });
      return false;
    }
  };
}
