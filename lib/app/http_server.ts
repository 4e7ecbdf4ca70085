/** The metrics and probe endpoints. */
import type { ListenAddr } from "./config.ts";
import type { Metrics } from "../metrics/metrics.ts";

export interface Probes {
  /** Undefined once the caches are synced (the process can do its job), otherwise why not, with the cause. */
  notReady(): string | undefined;
  /** Undefined when healthy, otherwise why not (e.g. the worker has not finished a unit for too long). */
  unhealthy(): string | undefined;
}

/**
 * Serves on `addr`. `::` (from `:port`) accepts IPv6 and IPv4 alike, as Go does; where the kernel has no IPv6, it
 * falls back to every IPv4 address.
 */
function serve(addr: ListenAddr, signal: AbortSignal, handler: Deno.ServeHandler): Deno.HttpServer {
  const options = { port: addr.port, signal, onListen: () => {} };
  if (addr.hostname !== "::") return Deno.serve({ ...options, hostname: addr.hostname }, handler);
  try {
    return Deno.serve({ ...options, hostname: "::" }, handler);
  } catch (e) {
    if (e instanceof Deno.errors.AddrInUse || e instanceof Deno.errors.PermissionDenied) throw e;
    return Deno.serve({ ...options, hostname: "0.0.0.0" }, handler);
  }
}

export function serveMetrics(addr: ListenAddr, metrics: Metrics, signal: AbortSignal): Deno.HttpServer {
  return serve(addr, signal, (req) => {
    if (new URL(req.url).pathname !== "/metrics") return new Response("not found\n", { status: 404 });
    return new Response(metrics.registry.metrics(), {
      headers: { "content-type": metrics.registry.contentType },
    });
  });
}

export function serveProbes(addr: ListenAddr, probes: Probes, signal: AbortSignal): Deno.HttpServer {
  return serve(addr, signal, (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/healthz") {
      const problem = probes.unhealthy();
      return new Response(problem ? `${problem}\n` : "ok\n", { status: problem ? 500 : 200 });
    }
    if (path === "/readyz") {
      const problem = probes.notReady();
      return problem ? new Response(`${problem}\n`, { status: 503 }) : new Response("ok\n");
    }
    return new Response("not found\n", { status: 404 });
  });
}
