/**
 * Builds (or finds) `actionlint`, the linter of GitHub Actions workflows, from its Go module
 * (testenv/actionlint/go.mod pins github.com/rhysd/actionlint), for the test of .github/workflows/. Cached like the
 * control plane and the Prometheus tools, keyed by actionlint's version, the module files, the Go version and the
 * platform, and linked into `.testenv/bin`: built once (about a minute cold), found afterwards. `ACTIONLINT`, the path
 * of an actionlint binary, skips the build.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { binDir, cacheRoot, exists, goVersion, NoToolchainError, runGo } from "./build.ts";

const here = join(dirname(fileURLToPath(import.meta.url)), "actionlint");
const MODULE = "github.com/rhysd/actionlint";

/** The version go.mod requires: the cache key starts with it, so a bump builds anew. */
async function pinnedVersion(): Promise<string> {
  const mod = await Deno.readTextFile(join(here, "go.mod"));
  const m = new RegExp(`^require ${MODULE.replaceAll(".", "\\.")} (v\\S+)$`, "m").exec(mod);
  if (!m) throw new Error(`testenv/actionlint/go.mod requires no ${MODULE}`);
  return m[1];
}

/** The path of an actionlint binary: `$ACTIONLINT`, or the cached build (built now if missing). */
export async function ensureActionlint(progress: (line: string) => void = (l) => console.error(l)): Promise<string> {
  const given = Deno.env.get("ACTIONLINT");
  if (given) return given;
  const go = await goVersion();
  if (!go) throw new NoToolchainError("Cannot build actionlint: Go is not installed (or set ACTIONLINT)");
  const version = await pinnedVersion();
  const parts = [go, Deno.build.os, Deno.build.arch];
  for (const f of ["go.mod", "go.sum"]) parts.push(await Deno.readTextFile(join(here, f)));
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(parts.join("\n")));
  const hash = Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("").slice(0, 16);
  const cacheDir = join(cacheRoot(), `actionlint-${version}-${hash}`);
  const binary = join(cacheDir, "actionlint");
  if (!(await exists(binary))) {
    await Deno.mkdir(cacheDir, { recursive: true });
    const started = Date.now();
    progress(`testenv: go build ${MODULE}/cmd/actionlint ${version} ...`);
    // A partial name of its own: two test processes building at once each rename a complete binary into place.
    const partial = join(cacheDir, `actionlint.${crypto.randomUUID()}.partial`);
    await runGo(["build", "-trimpath", "-ldflags", "-s -w", "-o", partial, `${MODULE}/cmd/actionlint`], here, progress);
    await Deno.rename(partial, binary);
    progress(`testenv: built actionlint in ${Math.round((Date.now() - started) / 1000)}s`);
  }
  await Deno.mkdir(binDir, { recursive: true });
  const link = join(binDir, "actionlint");
  if ((await Deno.readLink(link).catch(() => "")) !== binary) {
    const temp = `${link}.${crypto.randomUUID()}`;
    await Deno.symlink(binary, temp);
    await Deno.rename(temp, link);
  }
  return link;
}

if (import.meta.main) console.log(await ensureActionlint());
