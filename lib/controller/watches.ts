/**
 * The two watches every controller runs, Namespaces and SyncConfigs, decoded at the edge into the shapes the
 * controller reads (see lib/kube/api/), and what a watch's trouble costs: a counted restart and one log line.
 */
import { getLogger } from "@logtape/logtape";
import type { KubeClient } from "../kube/client.ts";
import { decodeNamespace } from "../kube/api/decode.ts";
import { listNamespacesPath } from "../kube/api/core_v1_client.ts";
import { Reflector } from "../kube/reflector.ts";
import { isForbidden } from "../kube/errors.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { type NamespaceInfo, namespaceInfo } from "../model/namespace_info.ts";
import type { LabelKeys } from "../model/label_keys.ts";
import type { SyncConfig } from "../model/syncconfig.ts";
import { decodeSyncConfig, syncConfigsPath } from "../sync/syncconfig_api.ts";

const log = getLogger(["espejo", "controller"]);

export interface NamespaceLookup {
  get(name: string): NamespaceInfo | undefined;
}

/** Counts a watch's restart or failure and says it once in the log. */
export class WatchTrouble {
  constructor(private readonly metrics: Metrics) {}

  restarted(resource: string, reason: string): void {
    this.metrics.watchRestarts.inc({ resource });
    log.info("Watch of {resource} restarted: {reason}", { resource, reason });
  }

  failed(resource: string, error: unknown, retryInMs: number): void {
    // A 403 is a right espejo lacks, not a watch in trouble: its items fail (EspejoItemsFailing), or the passes
    // stall (EspejoStalled); counting it here too would fire a second alert for the one cause.
    if (!isForbidden(error)) this.metrics.watchRestarts.inc({ resource });
    log.warn("Watch of {resource} failed, retrying in {retryInMs} ms: {error}", {
      resource,
      retryInMs,
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

type OnChange<T> = (type: string, value: T, old: T | undefined) => void;

export function watchNamespaces(
  client: KubeClient,
  trouble: WatchTrouble,
  onChange: OnChange<NamespaceInfo>,
  /** The label keys SyncConfigs read: a namespace with huge labels keeps only those. */
  labelKeys: LabelKeys,
): Reflector<NamespaceInfo> {
  return new Reflector<NamespaceInfo>(client, {
    path: listNamespacesPath(),
    decode: (raw, previous) => {
      const ns = decodeNamespace(raw);
      return ns && namespaceInfo(ns, previous, Date.now(), labelKeys);
    },
    onChange,
    onWatchRestart: (reason) => trouble.restarted("namespaces", reason),
    onError: (e, ms) => trouble.failed("namespaces", e, ms),
  });
}

/** The SyncConfigs in `watchNamespace` (WATCH_NAMESPACE), or in every namespace when it is empty. */
export function watchSyncConfigs(
  client: KubeClient,
  watchNamespace: string,
  trouble: WatchTrouble,
  onChange: OnChange<SyncConfig>,
): Reflector<SyncConfig> {
  return new Reflector<SyncConfig>(client, {
    path: syncConfigsPath(watchNamespace),
    decode: decodeSyncConfig,
    onChange,
    onWatchRestart: (reason) => trouble.restarted("syncconfigs", reason),
    onError: (e, ms) => trouble.failed("syncconfigs", e, ms),
  });
}

/**
 * Why the controller is not ready: the caches that have not finished their first list, each with its last list or
 * watch error (a wrong CA, a refused connection, a 403), so that `/readyz` says the cause, not only that it waits.
 */
export function notSyncedReason(
  caches: Record<string, { hasSynced: boolean; lastError: unknown }>,
): string | undefined {
  const why = Object.entries(caches).filter(([, c]) => !c.hasSynced).map(([name, c]) =>
    c.lastError ? `${name}: ${c.lastError instanceof Error ? c.lastError.message : String(c.lastError)}` : name
  );
  return why.length ? `caches are not synced yet: ${why.join("; ")}` : undefined;
}
