/**
 * A throwaway control plane holding the bench's workload in sync already: N namespaces, M SyncConfigs of K items
 * (bench/workload.ts), converged by a controller outside any limits (setup, not measured), which then stops. What a
 * stage measures starts from there: a restart, a failover.
 */
import { join } from "node:path";
import { ControlPlane, freePorts, type Identity, kubeconfigYaml } from "../../testenv/controlplane.ts";
import { espejoIdentity, optIn } from "../../testenv/espejo_rbac.ts";
import { installBase } from "../../testenv/shared.ts";
import type { HttpKubeClient } from "../../lib/kube/client.ts";
import { ControllerProcess, until } from "./controller.ts";
import { createNamespaces } from "./namespaces.ts";
import { BENCH_LABEL, benchSyncConfig, ITEMS_PER_CONFIG } from "../workload.ts";

export const CONFIG_NS = "bench-config";
export const SC_API = `/apis/sync.appuio.ch/v1alpha1/namespaces/${CONFIG_NS}/syncconfigs`;
export const namespaceName = (i: number): string => `bench-${String(i).padStart(5, "0")}`;

export interface ConvergedWorkload {
  cp: ControlPlane;
  admin: HttpKubeClient;
  /** A scratch directory for kubeconfigs and logs, removed by {@link ConvergedWorkload.stop}. */
  dir: string;
  /** espejo's ServiceAccount (deploy/'s RBAC) and a kubeconfig for it. */
  identity: Identity;
  kubeconfig: string;
  setupSeconds: number;
  stop(): Promise<void>;
}

export async function convergedWorkload(
  N: number,
  M: number,
  log: (s: string) => void,
): Promise<ConvergedWorkload> {
  const K = ITEMS_PER_CONFIG;
  log(`N=${N}: starting a control plane`);
  const cp = await ControlPlane.start({ audit: true, log: () => {} });
  const dir = await Deno.makeTempDir({ prefix: "espejo-bench-" });
  const admin = cp.client();
  const stop = async () => {
    admin.close();
    await cp.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  try {
    await installBase(cp.client());
    await optIn(admin, "secrets"); // the workload's deleteItems name Secrets
    const identity = await espejoIdentity(admin, CONFIG_NS);
    const kubeconfig = join(dir, "kubeconfig");
    await Deno.writeTextFile(kubeconfig, kubeconfigYaml(cp.server, cp.caPem, identity));
    log(`N=${N}: ${N} namespaces, ${M} SyncConfigs of ${K} items, converged outside the limits`);
    const names = Array.from({ length: N }, (_, i) => namespaceName(i));
    await createNamespaces(admin, names, { [BENCH_LABEL]: "yes" }, 64);
    for (let i = 0; i < M; i++) await admin.request({ method: "POST", path: SC_API, body: benchSyncConfig(i) });
    const [metricsPort, healthPort] = await freePorts(2);
    const t0 = performance.now();
    const setup = new ControllerProcess({
      kubeconfig,
      metricsPort,
      healthPort,
      logFile: join(dir, "setup.log"),
      configNamespace: CONFIG_NS,
      readyTimeoutMs: 60_000,
    });
    await setup.start(3600);
    await until(
      "the setup's convergence",
      async () => {
        setup.alive();
        for (let i = 0; i < M; i++) if ((await statusSynced(admin, `bench-c${i}`)) !== N * K) return false;
        return true;
      },
      Math.max(600_000, N * 300),
      2000,
    );
    const setupSeconds = (performance.now() - t0) / 1000;
    await setup.stop();
    return { cp, admin, dir, identity, kubeconfig, setupSeconds, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** The synchronizedItemCount of SyncConfig `name` (0 before its first status). */
export async function statusSynced(admin: HttpKubeClient, name: string): Promise<number> {
  const sc = await admin.request<{ status?: { synchronizedItemCount?: number } }>({
    method: "GET",
    path: `${SC_API}/${name}`,
  });
  return sc.status?.synchronizedItemCount ?? 0;
}
