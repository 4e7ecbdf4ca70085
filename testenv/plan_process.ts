/** `espejo plan` as a process, as shipped (deno.permissions and deno.v8-flags), for the tests that run it. */
import { join } from "node:path";
import { repoRoot } from "./build.ts";
import { shippedFlags } from "./permissions.ts";

export interface PlanRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** `espejo plan` as shipped, with `env` and no other variable than Deno's own, and `stdin`, if any. */
export async function planProcess(args: string[], env: Record<string, string>, stdin?: string): Promise<PlanRun> {
  const denos = Object.fromEntries(
    ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME"].flatMap((k) => (Deno.env.get(k) ? [[k, Deno.env.get(k)!]] : [])),
  );
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...shippedFlags(), join(repoRoot, "main.ts"), "plan", ...args],
    env: { ...denos, ...env },
    clearEnv: true,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const out = await child.output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}
