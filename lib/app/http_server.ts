/** The metrics and probe endpoints. */
import type { ListenAddr } from "./config.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { MAX_AUTHORIZATION_BYTES, type MetricsAuth } from "./metrics_auth.ts";
import type { ServingCert } from "./self_signed.ts";

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
function serve(
  addr: ListenAddr,
  signal: AbortSignal,
  handler: Deno.ServeHandler,
  tls?: ServingCert,
): Deno.HttpServer {
  const options = { port: addr.port, signal, onListen: () => {}, ...(tls ? { cert: tls.cert, key: tls.key } : {}) };
  if (addr.hostname !== "::") return Deno.serve({ ...options, hostname: addr.hostname }, handler);
  try {
    return Deno.serve({ ...options, hostname: "::" }, handler);
  } catch (e) {
    if (e instanceof Deno.errors.AddrInUse || e instanceof Deno.errors.PermissionDenied) throw e;
    return Deno.serve({ ...options, hostname: "0.0.0.0" }, handler);
  }
}

/** What `--metrics-secure` adds: the serving certificate, and who may scrape (lib/app/metrics_auth.ts). */
export interface SecureMetrics {
  tls: ServingCert;
  auth: Pick<MetricsAuth, "check">;
}

/**
 * Serves /metrics. With `secure`, over HTTPS to authorized scrapers only (lib/app/metrics_auth.ts bounds what the
 * checks cost): an Authorization header longer than {@link MAX_AUTHORIZATION_BYTES} is answered 431 unreviewed, a
 * check is given the request's signal (aborted when the client goes away), and a refusal for want of budget carries
 * `Retry-After`.
 */
export function serveMetrics(
  addr: ListenAddr,
  metrics: Metrics,
  signal: AbortSignal,
  secure?: SecureMetrics,
): Deno.HttpServer {
  return serve(addr, signal, async (req) => {
    const path = new URL(req.url).pathname;
    if (path !== "/metrics") return new Response("not found\n", { status: 404 });
    if (secure) {
      const authorization = req.headers.get("authorization");
      if ((authorization?.length ?? 0) > MAX_AUTHORIZATION_BYTES) {
        return new Response(
          `Request Header Fields Too Large: the Authorization header is longer than ${MAX_AUTHORIZATION_BYTES} bytes\n`,
          { status: 431 },
        );
      }
      const verdict = await secure.auth.check(authorization, path, req.signal);
      if (!verdict.ok) {
        const retry = "retryAfterSeconds" in verdict ? { "retry-after": String(verdict.retryAfterSeconds) } : undefined;
        return new Response(`${verdict.reason}\n`, { status: verdict.status, headers: retry });
      }
    }
    return new Response(metrics.registry.metrics(), {
      headers: { "content-type": metrics.registry.contentType },
    });
  }, secure?.tls);
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
