/**
 * The files `espejo plan -f` reads, found as `kubectl apply -f` finds them: a file as given (any name), a
 * directory's `*.yaml`, `*.yml` and `*.json` files in name order (with `-R`, those of its subdirectories too), and
 * `-` for standard input (read once). The text of each, with the name it is reported by.
 */
import { join } from "node:path";
import { isManifestName } from "./input.ts";

export interface Source {
  /** The path, or `stdin`. */
  name: string;
  text: string;
}

export async function readSources(
  paths: string[],
  recursive: boolean,
  stdin: () => Promise<string> = readStdin,
): Promise<Source[]> {
  const out: Source[] = [];
  let stdinRead = false;
  for (const path of paths) {
    if (path === "-") {
      if (stdinRead) throw new Error("-f - is given more than once: standard input can be read only once");
      stdinRead = true;
      out.push({ name: "stdin", text: await stdin() });
      continue;
    }
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(path);
    } catch (e) {
      throw new Error(`the path "${path}" does not exist${e instanceof Deno.errors.NotFound ? "" : `: ${e}`}`);
    }
    if (!info.isDirectory) {
      out.push({ name: path, text: await Deno.readTextFile(path) });
      continue;
    }
    for (const file of await manifestsIn(path, recursive)) {
      out.push({ name: file, text: await Deno.readTextFile(file) });
    }
  }
  return out;
}

/** The manifest files of `dir` in name order; with `recursive`, depth first, as Go's filepath.Walk visits them. */
async function manifestsIn(dir: string, recursive: boolean): Promise<string[]> {
  const entries: Deno.DirEntry[] = [];
  for await (const e of Deno.readDir(dir)) entries.push(e);
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const out: string[] = [];
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory) {
      if (recursive) out.push(...await manifestsIn(path, true));
    } else if (isManifestName(e.name)) out.push(path);
  }
  return out;
}

async function readStdin(): Promise<string> {
  return await new Response(Deno.stdin.readable).text();
}
