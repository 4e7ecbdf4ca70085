/** What the controller is given: its client, where it reads SyncConfigs, and the flags that shape its work. */
import type { KubeClient } from "../kube/client.ts";
import type { Metrics } from "../metrics/metrics.ts";

export interface ControllerOptions {
  client: KubeClient;
  /** Only SyncConfigs in this namespace are read; empty means all namespaces (WATCH_NAMESPACE). */
  watchNamespace: string;
  reconcileIntervalMs: number;
  /** Namespaces synced at the same time (`--concurrent-syncs`); default 1. */
  concurrentSyncs?: number;
  /**
   * `--trusted-namespaces` (delegated mode): only SyncConfigs of these namespaces may write as espejo; the others must
   * name a ServiceAccount (lib/model/identity.ts). Undefined: off.
   */
  trustedNamespaces?: readonly string[];
  /** `--prune-default`: prune for SyncConfigs without a prune annotation (lib/sync/prune_decisions.ts). */
  pruneDefault?: boolean;
  /** `--full-compare-interval` (see freshness.ts); 0 compares every namespace in every pass. */
  fullCompareIntervalMs?: number;
  metrics: Metrics;
  /** Resolves once this process may write (leader election); default: at once. */
  leadership?: (signal: AbortSignal) => Promise<void>;
  now?: () => Date;
}
