/**
 * espejo: copies objects into many namespaces as SyncConfig resources describe.
 * Flags -> config, logging, API client, probes and metrics, leader election, the controller, signal handling.
 */
import { getLogger } from "@logtape/logtape";
import { FlagError, readCommandLine, subcommandOf } from "./lib/app/config.ts";
import { formatDuration } from "./lib/app/duration.ts";
import { Controller } from "./lib/controller/controller.ts";
import { serveMetrics, serveProbes } from "./lib/app/http_server.ts";
import { HttpKubeClient } from "./lib/kube/client.ts";
import { loadClientOptions } from "./lib/kube/kubeconfig.ts";
import { LeaderElector } from "./lib/kube/leader.ts";
import { setupLogging } from "./lib/app/logging.ts";
import { Metrics } from "./lib/metrics/metrics.ts";
import { VERSION } from "./lib/app/version.ts";
import { MetricsAuth } from "./lib/app/metrics_auth.ts";
import { selfSignedCert, type ServingCert } from "./lib/app/self_signed.ts";
import { join } from "node:path";

/** A unit of work that has been running this long (a wedged worker) makes /healthz report unhealthy. */
const WEDGED_AFTER_MS = 5 * 60_000;
/** Shutdown must finish within the Deployment's terminationGracePeriodSeconds (30 s); leave a margin. */
const SHUTDOWN_LIMIT_MS = 20_000;

async function main(): Promise<number> {
  let commandLine;
  try {
    commandLine = readCommandLine(Deno.args, Deno.env.toObject(), VERSION);
  } catch (e) {
    if (!(e instanceof FlagError)) throw e;
    console.error(`error: ${e.message}`);
    return e.exitCode;
  }
  if ("print" in commandLine) {
    console.log(commandLine.print.trimEnd());
    return 0;
  }
  const config = commandLine.run;
  await setupLogging(config.logFormat, config.verbose);
  const log = getLogger(["espejo", "main"]);
  for (const warning of commandLine.warnings) log.warn("{warning}", { warning });
  log.info("Starting espejo {version}", {
    version: VERSION,
    reconcileInterval: formatDuration(config.reconcileIntervalMs),
    fullCompareInterval: formatDuration(config.fullCompareIntervalMs),
    watchNamespace: config.watchNamespace || "(all)",
    leaderElection: config.enableLeaderElection,
    metricsAddr: config.metricsAddr ? `${config.metricsAddr.hostname}:${config.metricsAddr.port}` : "off",
    healthAddr: config.healthAddr ? `${config.healthAddr.hostname}:${config.healthAddr.port}` : "off",
    kubeApiQps: config.kubeApiQps,
    kubeApiBurst: config.kubeApiBurst,
    concurrentSyncs: config.concurrentSyncs,
    pruneDefault: config.pruneDefault,
    trustedNamespaces: config.trustedNamespaces?.join(",") ?? "(off)",
  });
  if (config.reconcileIntervalMs === 0) {
    log.info("--reconcile-interval is 0: no interval passes, only events cause syncs (as in the Go espejo)");
  }
  if (!config.watchNamespace && !config.trustedNamespaces) {
    log.warn(
      "WATCH_NAMESPACE is empty: SyncConfigs are read from all namespaces, so anyone who can create a SyncConfig in " +
        "any namespace controls every namespace; set WATCH_NAMESPACE to the controller's own namespace to limit " +
        "that, or --trusted-namespaces to make the others write as a ServiceAccount of their own (docs/delegation.md)",
    );
  }

  let clientOptions;
  try {
    clientOptions = await loadClientOptions(config.kubeconfig);
  } catch (e) {
    log.fatal("Cannot load the Kubernetes client configuration: {error}", { error: (e as Error).message });
    return 1;
  }
  const metrics = new Metrics(true);
  metrics.compat.host = new URL(clientOptions.server).host;
  const client = new HttpKubeClient({
    ...clientOptions,
    qps: config.kubeApiQps,
    burst: config.kubeApiBurst,
    userAgent: `espejo/${VERSION}`,
    onResponse: metrics.observeResponse,
  });

  const stop = new AbortController();
  for (const sig of ["SIGTERM", "SIGINT"] as const) {
    Deno.addSignalListener(sig, () => {
      if (stop.signal.aborted) return;
      log.info("Received {signal}: finishing the unit in progress, then stopping", { signal: sig });
      stop.abort();
      setTimeout(() => {
        log.error("Shutdown took longer than {ms} ms; exiting", { ms: SHUTDOWN_LIMIT_MS });
        Deno.exit(1);
      }, SHUTDOWN_LIMIT_MS).unref?.();
    });
  }

  let elector: LeaderElector | undefined;
  if (config.enableLeaderElection) {
    const namespace = config.leaderElectionNamespace ?? podNamespace() ?? (config.watchNamespace || undefined);
    if (!namespace) {
      log.fatal(
        "--enable-leader-election needs a namespace for its Lease: set --leader-election-namespace or POD_NAMESPACE",
      );
      return 1;
    }
    elector = new LeaderElector({
      client,
      namespace,
      identity: `${Deno.hostname()}_${crypto.randomUUID()}`,
      leaseDurationMs: config.leaseDurationMs,
      renewDeadlineMs: config.renewDeadlineMs,
      retryPeriodMs: config.retryPeriodMs,
      onChange: (leader) => metrics.setLeader(leader),
    });
    metrics.setLeader(false); // a standby says so (0), rather than nothing
  } else {
    metrics.setLeader(true);
  }

  const controller = new Controller({
    client,
    watchNamespace: config.watchNamespace,
    reconcileIntervalMs: config.reconcileIntervalMs,
    fullCompareIntervalMs: config.fullCompareIntervalMs,
    concurrentSyncs: config.concurrentSyncs,
    pruneDefault: config.pruneDefault,
    trustedNamespaces: config.trustedNamespaces,
    metrics,
    leadership: elector
      ? async (signal) => {
        await elector.acquire(signal);
        elector.hold(signal, () => Deno.exit(1)); // never keep writing without the Lease
      }
      : undefined,
  });

  const servers: Deno.HttpServer[] = [];
  let reviewClient: HttpKubeClient | undefined;
  if (config.metricsAddr) {
    let secure;
    if (config.metricsSecure) {
      try {
        // Token reviews go through a client of their own, paced by MetricsAuth's budget, not the sync client's limiter.
        reviewClient = new HttpKubeClient({
          ...clientOptions,
          userAgent: `espejo/${VERSION}`,
          onResponse: metrics.observeResponse,
        });
        secure = { tls: await servingCert(config.metricsCertPath), auth: new MetricsAuth(reviewClient) };
      } catch (e) {
        log.fatal("Cannot serve metrics over HTTPS: {error}", { error: (e as Error).message });
        return 1;
      }
    }
    servers.push(serveMetrics(config.metricsAddr, metrics, stop.signal, secure));
  }
  if (config.healthAddr) {
    servers.push(serveProbes(config.healthAddr, {
      notReady: () => controller.notReady,
      unhealthy: () =>
        controller.idleForMs > WEDGED_AFTER_MS
          ? `a unit of work has been running for ${Math.round(controller.idleForMs / 1000)}s`
          : undefined,
    }, stop.signal));
  }

  await controller.run(stop.signal);
  await elector?.release();
  // Idle keep-alive connections of scrapers can hold a graceful server shutdown open; do not wait for them long.
  await Promise.race([Promise.all(servers.map((s) => s.finished)), new Promise((r) => setTimeout(r, 1000))]);
  client.close();
  reviewClient?.close();
  log.info("Stopped");
  return 0;
}

/** `tls.crt` and `tls.key` of `--metrics-cert-path`, or a self-signed certificate (as controller-runtime makes). */
async function servingCert(dir: string | undefined): Promise<ServingCert> {
  if (!dir) return await selfSignedCert();
  const read = (name: string) =>
    Deno.readTextFile(join(dir, name)).catch((e) => {
      throw new Error(`--metrics-cert-path ${dir}: cannot read ${name}: ${e.message}`);
    });
  return { cert: await read("tls.crt"), key: await read("tls.key") };
}

/** The namespace of the pod we run in, from POD_NAMESPACE or the service account mount. */
function podNamespace(): string | undefined {
  const fromEnv = Deno.env.get("POD_NAMESPACE");
  if (fromEnv) return fromEnv;
  try {
    return Deno.readTextFileSync("/var/run/secrets/kubernetes.io/serviceaccount/namespace").trim() || undefined;
  } catch {
    return undefined;
  }
}

if (import.meta.main) {
  // `espejo plan ...` shows what the controller would do (lib/app/plan_command.ts); anything else runs it. Flags may
  // come before the subcommand, as with cobra: `espejo --kubeconfig x plan` hands plan `--kubeconfig x`.
  // Imported only then: the plan's code (and its YAML parser) would cost the controller memory it never uses.
  const subcommand = subcommandOf(Deno.args);
  if (subcommand?.name === "plan") {
    const { runPlan } = await import("./lib/app/plan_command.ts");
    Deno.exit(await runPlan(subcommand.args, Deno.env.toObject()));
  }
  Deno.exit(await main());
}
