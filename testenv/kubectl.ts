/**
 * kubectl as a user runs it, against the test control plane: for tests of what docs tell people to type (`kubectl
 * apply -k ...`, `kubectl kustomize`), so that the command and its input are the ones written there.
 */
import { kubeconfigYaml } from "./controlplane.ts";
import type { TestCluster } from "./shared.ts";

export interface KubectlResult {
  ok: boolean;
  stdout: string;
  stderr: string;
}

/** Runs kubectl with `args` (in `cwd`, with `stdin`), as the cluster's admin unless the args need no cluster. */
export async function kubectlAs(
  c: TestCluster | undefined,
  args: string[],
  opts: { stdin?: string; cwd?: string } = {},
): Promise<KubectlResult> {
  let kubeconfig: string | undefined;
  if (c) {
    kubeconfig = await Deno.makeTempFile({ suffix: ".kubeconfig" });
    await Deno.writeTextFile(kubeconfig, kubeconfigYaml(c.server, c.caPem, c.admin), { mode: 0o600 });
  }
  try {
    const child = new Deno.Command("kubectl", {
      args: kubeconfig ? ["--kubeconfig", kubeconfig, ...args] : args,
      cwd: opts.cwd,
      stdin: opts.stdin === undefined ? "null" : "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    if (opts.stdin !== undefined) {
      const w = child.stdin.getWriter();
      await w.write(new TextEncoder().encode(opts.stdin));
      await w.close();
    }
    const out = await child.output();
    const dec = new TextDecoder();
    return { ok: out.code === 0, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
  } finally {
    if (kubeconfig) await Deno.remove(kubeconfig);
  }
}

/** {@link kubectlAs} that must succeed: its stdout, or an error with its stderr. */
export async function kubectl(
  c: TestCluster | undefined,
  args: string[],
  opts: { stdin?: string; cwd?: string } = {},
): Promise<string> {
  const out = await kubectlAs(c, args, opts);
  if (!out.ok) throw new Error(`kubectl ${args.join(" ")} failed:\n${out.stderr}`);
  return out.stdout;
}
