/**
 * Runs the controller in-process against the test control plane, under the ServiceAccount identity and the RBAC
 * of deploy/ (never as admin), opted in to what a test syncs beyond the common kinds, and helpers to read what it did.
 */
import { Controller } from "../lib/controller/controller.ts";
import { HttpKubeClient } from "../lib/kube/client.ts";
import { Metrics } from "../lib/metrics/metrics.ts";
import type { KubeObject } from "../lib/kube/objects.ts";
import type { AuditEvent, Identity } from "./controlplane.ts";
import { DEPLOYED, espejoIdentity, type ManagerRole, type OptIn, optIn } from "./espejo_rbac.ts";
import { auditEvents, clientFor, eventually, type TestCluster } from "./shared.ts";
import { isNotFound } from "../lib/kube/errors.ts";
import { setupLogging } from "../lib/app/logging.ts";

// ESPEJO_TEST_LOG=debug shows the controller's log while tests run.
if (Deno.env.get("ESPEJO_TEST_LOG")) await setupLogging("text", Deno.env.get("ESPEJO_TEST_LOG") === "debug");

export interface RunningController {
  controller: Controller;
  metrics: Metrics;
  identity: Identity;
  stop(): Promise<void>;
}

export async function startController(
  c: TestCluster,
  opts: {
    watchNamespace: string;
    reconcileIntervalMs?: number;
    fullCompareIntervalMs?: number;
    qps?: number;
    pruneDefault?: boolean;
    /** The process_* and nodejs_* metrics and the memory limit too, as main.ts serves them. */
    processMetrics?: boolean;
    /** The opt-ins of deploy/opt-in/ the test needs (Secrets, ServiceAccounts), applied as a cluster admin would. */
    optIn?: OptIn[];
    /** The ClusterRole the controller is bound to: deploy/'s, or a copy (testenv/espejo_rbac.ts). */
    manager?: ManagerRole;
    /** `--trusted-namespaces`: delegated mode (lib/model/identity.ts). */
    trustedNamespaces?: string[];
    /** Where espejo's ServiceAccount lives (deploy/'s: espejo-system); default: `watchNamespace`. */
    identityNamespace?: string;
  },
): Promise<RunningController> {
  const admin = clientFor(c);
  const manager = opts.manager ?? DEPLOYED;
  for (const what of opts.optIn ?? []) await optIn(admin, what, manager);
  const identity = await espejoIdentity(admin, opts.identityNamespace ?? opts.watchNamespace, { manager });
  admin.close();
  const metrics = new Metrics(opts.processMetrics);
  const client = new HttpKubeClient({
    server: c.server,
    caCerts: [c.caPem],
    authorization: () => `Bearer ${identity.token}`,
    // Unlimited unless a test asks for the deployed limit (--kube-api-qps 50, burst 100).
    qps: opts.qps,
    burst: opts.qps ? 2 * opts.qps : undefined,
    onResponse: metrics.observeResponse,
    userAgent: "espejo-under-test",
  });
  const controller = new Controller({
    client,
    watchNamespace: opts.watchNamespace,
    reconcileIntervalMs: opts.reconcileIntervalMs ?? 600_000,
    fullCompareIntervalMs: opts.fullCompareIntervalMs,
    concurrentSyncs: 4, // as deployed
    pruneDefault: opts.pruneDefault,
    trustedNamespaces: opts.trustedNamespaces,
    metrics,
  });
  const stopper = new AbortController();
  const running = controller.run(stopper.signal);
  await eventually(() => controller.ready, 30_000, "controller caches to sync");
  return {
    controller,
    metrics,
    identity,
    async stop() {
      stopper.abort();
      await running;
      client.close();
    },
  };
}

/** Audit events caused by `identity` since `since` (ISO time), excluding long-running watches. */
export async function requestsBy(c: TestCluster, identity: Identity, since: string): Promise<AuditEvent[]> {
  return (await auditEvents(c)).filter((e) =>
    e.user.username === identity.username && e.requestReceivedTimestamp >= since && e.verb !== "watch"
  );
}

/** An object as tests read it: ConfigMap-like `data` typed for convenience. */
export type TestObject = KubeObject & { data?: Record<string, string> };

export async function getObject(admin: HttpKubeClient, path: string): Promise<TestObject | undefined> {
  try {
    return await admin.request<TestObject>({ method: "GET", path });
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

export async function createNamespace(admin: HttpKubeClient, name: string, labels: Record<string, string> = {}) {
  await admin.request({
    method: "POST",
    path: "/api/v1/namespaces",
    body: { apiVersion: "v1", kind: "Namespace", metadata: { name, labels } },
  });
}

/** Creates SyncConfig `namespace/name` as `client` (an admin, or a team's author with its own token). */
export async function createSyncConfig(
  client: HttpKubeClient,
  namespace: string,
  name: string,
  spec: unknown,
  annotations?: Record<string, string>,
) {
  return await client.request<KubeObject>({
    method: "POST",
    path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${namespace}/syncconfigs`,
    body: {
      apiVersion: "sync.appuio.ch/v1alpha1",
      kind: "SyncConfig",
      metadata: { name, namespace, ...(annotations ? { annotations } : {}) },
      spec,
    },
  });
}

export interface SyncConfigStatusView {
  synchronizedItemCount?: number;
  deletedItemCount?: number;
  failedItemCount?: number;
  conditions?: { type: string; status: string; reason?: string; message?: string }[];
}

export async function statusOf(admin: HttpKubeClient, namespace: string, name: string): Promise<SyncConfigStatusView> {
  const sc = await admin.request<{ status?: SyncConfigStatusView }>({
    method: "GET",
    path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${namespace}/syncconfigs/${name}`,
  });
  return sc.status ?? {};
}

export function condition(s: SyncConfigStatusView, type: string) {
  return s.conditions?.find((c) => c.type === type);
}

/** Current time as the audit log writes it (RFC 3339, microseconds), a little in the past to absorb clock steps. */
export function auditNow(): string {
  return new Date(Date.now() - 1).toISOString().replace(/Z$/, "000Z");
}

/** Sum of a counter's values with the given labels (a promise, as callers poll it beside requests). */
export function counterValue(metrics: Metrics, name: string, labels: Record<string, string> = {}): Promise<number> {
  return Promise.resolve(
    metrics.registry.values(name)
      .filter((v) => Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want))
      .reduce((a, v) => a + v.value, 0),
  );
}

/** Requests about the SyncConfig itself (its status, its events), which live in the SyncConfig's namespace. */
export function aboutSyncConfig(e: AuditEvent): boolean {
  return e.objectRef?.resource === "syncconfigs" || e.objectRef?.resource === "events";
}

/** An Event as tests read it. */
export interface EventView {
  type: string;
  reason: string;
  message: string;
  count?: number;
  metadata: { name: string; creationTimestamp?: string };
  involvedObject: { name: string; kind: string };
}

/** The Events about SyncConfig `namespace/name`. */
export async function eventsOf(admin: HttpKubeClient, namespace: string, name: string): Promise<EventView[]> {
  const list = await admin.request<{ items: EventView[] }>({
    method: "GET",
    path: `/api/v1/namespaces/${namespace}/events`,
    query: { fieldSelector: `involvedObject.name=${name},involvedObject.kind=SyncConfig` },
  });
  return list.items;
}
