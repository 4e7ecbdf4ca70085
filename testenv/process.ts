/**
 * The controller as a process, as the image runs it (main.ts with deno.permissions and deno.v8-flags), optionally
 * inside a cgroup, its output appended to a file by the shell: nothing in the caller has to keep a pipe drained.
 */
import { join } from "node:path";
import { repoRoot } from "./build.ts";
import type { Cgroup } from "./cgroup.ts";
import { shippedFlags } from "./permissions.ts";

/** `deno run` argv for main.ts with the shipped flags, then `args`. */
export function shippedArgv(args: string[], main = join(repoRoot, "main.ts"), flags = shippedFlags()): string[] {
  return [Deno.execPath(), "run", ...flags, main, ...args];
}

const shellQuoted = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

/**
 * Starts `argv` through a shell that joins `cgroup` first and then becomes the command (exec, so the child's pid is
 * the command's and nothing runs outside the group), stdout and stderr appended to `logFile`.
 */
export function spawnLogged(
  argv: string[],
  opts: { env: Record<string, string>; logFile: string; cgroup?: Cgroup; cwd?: string },
): Deno.ChildProcess {
  const enter = opts.cgroup ? `${opts.cgroup.enterCommand()} && ` : "";
  return new Deno.Command("sh", {
    args: ["-c", `${enter}exec "$@" >>${shellQuoted(opts.logFile)} 2>&1`, "sh", ...argv],
    env: opts.env,
    cwd: opts.cwd,
    stdin: "null",
  }).spawn();
}
