/**
 * Settling the prune finalizer of a SyncConfig (lib/controller/pruning.ts decides when): added while pruning is on,
 * removed once a deleted SyncConfig's objects are gone or pruning is off. A merge patch at the version seen, so that
 * a change meanwhile fails (409) instead of being overwritten; espejo's own status write in between is the usual one.
 */
import { getLogger } from "@logtape/logtape";
import type { KubeClient } from "../kube/client.ts";
import { isConflict, isNotFound } from "../kube/errors.ts";
import type { Reflector } from "../kube/reflector.ts";
import { PRUNE_FINALIZER } from "../model/markers.ts";
import type { SyncConfig } from "../model/syncconfig.ts";
import { FINALIZER_CONFLICT_BASE_MS, FINALIZER_FAILURE_BASE_MS, type WorkFacts } from "../sync/retry_policy.ts";
import { patchSyncConfig } from "../sync/syncconfig_client.ts";

const log = getLogger(["espejo", "prune"]);

export interface FinalizerDeps {
  client: KubeClient;
  syncConfigs: Pick<Reflector<SyncConfig>, "upsert">;
}

/** Adds or removes the finalizer, at the version seen; when that failed, when to try again. */
export async function setPruneFinalizer(
  d: FinalizerDeps,
  key: string,
  sc: SyncConfig,
  present: boolean,
): Promise<WorkFacts | undefined> {
  const others = (sc.metadata?.finalizers ?? []).filter((f) => f !== PRUNE_FINALIZER);
  const finalizers = present ? [...others, PRUNE_FINALIZER] : others;
  const [namespace, name] = key.split("/");
  try {
    const body = { metadata: { finalizers, resourceVersion: sc.metadata?.resourceVersion } };
    const reply = await patchSyncConfig(d.client, { namespace, name }, body, {
      urgent: true,
      contentType: "application/merge-patch+json",
    });
    d.syncConfigs.upsert(reply);
    log.info(`${present ? "Added" : "Removed"} finalizer {finalizer} of SyncConfig {syncConfig}`, {
      finalizer: PRUNE_FINALIZER,
      syncConfig: key,
    });
    return undefined;
  } catch (e) {
    if (isNotFound(e)) return undefined;
    // A conflict is mostly espejo's own status write in between: try again soon. Anything else backs off.
    if (!isConflict(e)) {
      log.warn("Could not update the finalizers of SyncConfig {syncConfig}: {error}", {
        syncConfig: key,
        error: String(e),
      });
    }
    return { retry: true, baseMs: isConflict(e) ? FINALIZER_CONFLICT_BASE_MS : FINALIZER_FAILURE_BASE_MS };
  }
}
