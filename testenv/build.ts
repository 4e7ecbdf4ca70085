/**
 * Builds (or finds) the control-plane binaries the tests run against: etcd, kube-apiserver and
 * kube-controller-manager, in the layout controller-runtime's envtest calls KUBEBUILDER_ASSETS.
 *
 * Binaries are built with the ordinary `go build` from the small Go modules beside this file and cached
 * outside the checkout, keyed by the module files and the Go version, so a second run builds nothing.
 * When KUBEBUILDER_ASSETS is set those binaries are used as they are and nothing is built.
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const BINARIES = ["etcd", "kube-apiserver", "kube-controller-manager"] as const;
const KUBE_VERSION = "v1.35.4";

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot: string = resolve(here, "..");
export const testenvDir: string = join(repoRoot, ".testenv");
export const binDir: string = join(testenvDir, "bin");

type Progress = (line: string) => void;

/** Thrown when neither Go nor KUBEBUILDER_ASSETS is available; its message names both ways out. */
export class NoToolchainError extends Error {}

/**
 * Returns a directory holding `etcd`, `kube-apiserver` and `kube-controller-manager`.
 * Honors KUBEBUILDER_ASSETS; otherwise builds into the cache (minutes when cold) and links into `.testenv/bin`.
 */
export async function ensureBinaries(progress: Progress = (l) => console.error(l)): Promise<string> {
  const assets = Deno.env.get("KUBEBUILDER_ASSETS");
  if (assets) {
    for (const name of BINARIES) {
      if (!(await exists(join(assets, name)))) {
        throw new Error(`KUBEBUILDER_ASSETS=${assets} has no ${name}; it needs ${BINARIES.join(", ")}`);
      }
    }
    return assets;
  }
  const go = await goVersion();
  if (!go) {
    throw new NoToolchainError(
      "Cannot get the control plane binaries: Go is not installed and KUBEBUILDER_ASSETS is not set. " +
        "Either install Go 1.25 or newer (the binaries are then built from source), or set KUBEBUILDER_ASSETS " +
        "to a directory with etcd, kube-apiserver and kube-controller-manager (e.g. from `setup-envtest use -p path`)",
    );
  }
  const key = await cacheKey(go);
  const cacheDir = join(cacheRoot(), key);
  const missing = [];
  for (const name of BINARIES) if (!(await exists(join(cacheDir, name)))) missing.push(name);
  if (missing.length === 0) {
    progress(`testenv: control plane binaries cached in ${cacheDir}, nothing to build`);
  } else {
    progress(`testenv: building ${missing.join(", ")} with ${go} into ${cacheDir} (cold builds take 10-20 minutes)`);
    await Deno.mkdir(cacheDir, { recursive: true });
    const ldflags = (bin: string) =>
      bin === "etcd" ? "-s -w" : `-s -w -X k8s.io/component-base/version.gitVersion=${KUBE_VERSION} ` +
        `-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=35`;
    for (const bin of missing) {
      const [module, pkg] = bin === "etcd"
        ? ["etcd", "go.etcd.io/etcd/server/v3"]
        : ["kube", `k8s.io/kubernetes/cmd/${bin}`];
      const started = Date.now();
      progress(`testenv: go build ${pkg} ...`);
      await runGo(
        ["build", "-trimpath", "-ldflags", ldflags(bin), "-o", join(cacheDir, `${bin}.partial`), pkg],
        join(here, module),
        progress,
      );
      await Deno.rename(join(cacheDir, `${bin}.partial`), join(cacheDir, bin));
      progress(`testenv: built ${bin} in ${Math.round((Date.now() - started) / 1000)}s`);
    }
  }
  await Deno.mkdir(binDir, { recursive: true });
  for (const name of BINARIES) {
    const link = join(binDir, name);
    const target = join(cacheDir, name);
    if ((await Deno.readLink(link).catch(() => "")) === target) continue;
    // Several control planes may start at once (tests run in parallel): replace the link atomically.
    const temp = `${link}.${crypto.randomUUID()}`;
    await Deno.symlink(target, temp);
    await Deno.rename(temp, link);
  }
  return binDir;
}

export function cacheRoot(): string {
  const xdg = Deno.env.get("XDG_CACHE_HOME");
  const home = Deno.env.get("HOME") ?? "/tmp";
  return join(xdg || join(home, ".cache"), "espejo-testenv");
}

/** Hash of everything that decides what the build produces, so a changed go.sum never reuses old binaries. */
async function cacheKey(go: string): Promise<string> {
  const parts = [go, KUBE_VERSION, Deno.build.os, Deno.build.arch];
  for (const file of ["kube/go.mod", "kube/go.sum", "etcd/go.mod", "etcd/go.sum"]) {
    parts.push(await Deno.readTextFile(join(here, file)));
  }
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(parts.join("\n")));
  const hex = Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
  return `${KUBE_VERSION}-${hex.slice(0, 16)}`;
}

export async function goVersion(): Promise<string | undefined> {
  try {
    const out = await new Deno.Command("go", { args: ["env", "GOVERSION"], stdout: "piped", stderr: "null" })
      .output();
    return out.success ? new TextDecoder().decode(out.stdout).trim() : undefined;
  } catch {
    return undefined;
  }
}

export async function runGo(args: string[], cwd: string, progress: Progress): Promise<void> {
  const child = new Deno.Command("go", {
    args,
    cwd,
    env: { CGO_ENABLED: "0" },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // A cold build is quiet for minutes; a heartbeat shows it is alive.
  const started = Date.now();
  const heartbeat = setInterval(
    () => progress(`testenv:   still building (${Math.round((Date.now() - started) / 1000)}s)`),
    30_000,
  );
  try {
    const out = await child.output();
    if (!out.success) {
      const err = new TextDecoder().decode(out.stderr).trim().split("\n").slice(-20).join("\n");
      throw new Error(`go ${args.join(" ")} failed in ${cwd}:\n${err}`);
    }
  } finally {
    clearInterval(heartbeat);
  }
}

export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

if (import.meta.main) {
  try {
    console.log(await ensureBinaries());
  } catch (e) {
    console.error(e instanceof Error ? e.message : e);
    Deno.exit(1);
  }
}
