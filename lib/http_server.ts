/** The metrics and probe endpoints. */
import type { ListenAddr } from "./config.ts";
import type { Metrics } from "./metrics.ts";

export interface Probes {
  /** Caches synced (and, for a standby, warm): the process can do its job. */
  ready(): boolean;
  /** Undefined when healthy, otherwise why not (e.g. the worker has not finished a unit for too long). */
  unhealthy(): string | undefined;
}

export function serveMetrics(addr: ListenAddr, metrics: Metrics, signal: AbortSignal): Deno.HttpServer {
  return Deno.serve({ hostname: addr.hostname, port: addr.port, signal, onListen: () => {} }, async (req) => {
    if (new URL(req.url).pathname !== "/metrics") return new Response("not found\n", { status: 404 });
    return new Response(await metrics.registry.metrics(), {
      headers: { "content-type": metrics.registry.contentType },
    });
  });
}

export function serveProbes(addr: ListenAddr, probes: Probes, signal: AbortSignal): Deno.HttpServer {
  return Deno.serve({ hostname: addr.hostname, port: addr.port, signal, onListen: () => {} }, (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/healthz") {
      const problem = probes.unhealthy();
      return new Response(problem ? `${problem}\n` : "ok\n", { status: problem ? 500 : 200 });
    }
    if (path === "/readyz") {
      return probes.ready() ? new Response("ok\n") : new Response("caches are not synced yet\n", { status: 503 });
    }
    return new Response("not found\n", { status: 404 });
  });
}
