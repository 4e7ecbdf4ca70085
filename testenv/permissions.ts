/**
 * The runtime flags the shipped binary is compiled with, read by the Dockerfile too: the permission set
 * (deno.permissions) and the V8 flags (deno.v8-flags). Tests that run main.ts as a process use exactly these, so a
 * permission the code needs but the image lacks fails here, and so does code that needs what the V8 flags turn off
 * (`--lite-mode` runs without a JIT, so without WebAssembly).
 */
import { join } from "node:path";
import { repoRoot } from "./build.ts";

const linesOf = (file: string) =>
  Deno.readTextFileSync(join(repoRoot, file)).split("\n").map((l) => l.trim()).filter(Boolean);

export function espejoPermissions(): string[] {
  return linesOf("deno.permissions");
}

export function espejoV8Flags(): string[] {
  return linesOf("deno.v8-flags");
}

/** Everything `deno run` needs to run main.ts as the image runs it: permissions, then V8 flags. */
export function shippedFlags(): string[] {
  return [...espejoPermissions(), ...espejoV8Flags()];
}
