/**
 * Builds (or finds) `promtool` and `prometheus` from the Prometheus Go module (testenv/prometheus/go.mod), for the
 * tests of the alert rules and dashboard queries in deploy/monitoring/. Cached like the control plane, keyed by the
 * module files and the Go version, and linked into `.testenv/bin`. `PROMETHEUS_BIN` (a directory with both) skips
 * the build.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { binDir, cacheRoot, exists, goVersion, NoToolchainError, runGo } from "./build.ts";

const here = join(dirname(fileURLToPath(import.meta.url)), "prometheus");
export const PROMETHEUS_TOOLS = ["promtool", "prometheus"] as const;

export async function ensurePrometheusTools(
  progress: (line: string) => void = (l) => console.error(l),
): Promise<{ promtool: string; prometheus: string }> {
  const given = Deno.env.get("PROMETHEUS_BIN");
  if (given) return { promtool: join(given, "promtool"), prometheus: join(given, "prometheus") };
  const go = await goVersion();
  if (!go) {
    throw new NoToolchainError("Cannot build promtool and prometheus: Go is not installed (or set PROMETHEUS_BIN)");
  }
  const parts = [go, Deno.build.os, Deno.build.arch];
  for (const f of ["go.mod", "go.sum"]) parts.push(await Deno.readTextFile(join(here, f)));
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(parts.join("\n")));
  const hash = Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("").slice(0, 16);
  const cacheDir = join(cacheRoot(), `prometheus-${hash}`);
  await Deno.mkdir(cacheDir, { recursive: true });
  for (const tool of PROMETHEUS_TOOLS) {
    if (await exists(join(cacheDir, tool))) continue;
    const started = Date.now();
    progress(`testenv: go build ${tool} (github.com/prometheus/prometheus; a cold build takes about 5 minutes) ...`);
    const partial = join(cacheDir, `${tool}.partial`);
    await runGo(
      ["build", "-trimpath", "-ldflags", "-s -w", "-o", partial, `github.com/prometheus/prometheus/cmd/${tool}`],
      here,
      progress,
    );
    await Deno.rename(partial, join(cacheDir, tool));
    progress(`testenv: built ${tool} in ${Math.round((Date.now() - started) / 1000)}s`);
  }
  await Deno.mkdir(binDir, { recursive: true });
  const out: Record<string, string> = {};
  for (const tool of PROMETHEUS_TOOLS) {
    const link = join(binDir, tool);
    const target = join(cacheDir, tool);
    if ((await Deno.readLink(link).catch(() => "")) !== target) {
      const temp = `${link}.${crypto.randomUUID()}`;
      await Deno.symlink(target, temp);
      await Deno.rename(temp, link);
    }
    out[tool] = link;
  }
  return out as { promtool: string; prometheus: string };
}

if (import.meta.main) console.log(await ensurePrometheusTools());
