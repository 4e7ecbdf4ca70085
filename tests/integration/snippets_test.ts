/**
 * The shell snippets the docs give for pipelines are run as written, as a CI job runs them: each ```sh block marked
 * `<!-- pipeline-snippet -->` in README.md and docs/ goes to `bash -e -o pipefail` with `espejo` on PATH (main.ts
 * with the shipped flags), KUBECONFIG an admin's of the test cluster, in a repository of SyncConfigs
 * (`syncconfigs/`, a kustomize base, and `overlays/prod`), in three situations: nothing would change (the job
 * passes), something would (it passes and shows the plan), an Invalid SyncConfig in the files (it fails). A snippet
 * that aborts under `bash -e` on plan's exit code 2, or passes on 1, fails here.
 *
 * Stand-ins for what the development machines lack: `curl` serves the files the release workflow publishes (the
 * linux amd64 binary being the `espejo` above), only at the release URL of lib/app/version.ts's version; `docker run`
 * runs the image's entrypoint (the same `espejo`) with the image's environment and only the `-e` variables, container
 * paths in arguments and variables mapped to their bind mounts, only for the image release.yml publishes.
 */
import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { VERSION } from "../../lib/app/version.ts";
import { repoRoot } from "../../testenv/build.ts";
import { kubeconfigYaml } from "../../testenv/controlplane.ts";
import { imageEnvironment } from "../../testenv/image_env.ts";
import { shippedFlags } from "../../testenv/permissions.ts";
import { createNamespace, getObject, startController, statusOf } from "../../testenv/harness.ts";
import { clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const MARKER = "<!-- pipeline-snippet -->";
/** The namespace the snippets name: deploy/'s controller reads its SyncConfigs there. */
const CONTROLLER_NAMESPACE = "espejo-system";

interface Snippet {
  where: string;
  text: string;
}

function* markdownFiles(dir: string): Generator<string> {
  for (const e of Deno.readDirSync(dir)) {
    const p = join(dir, e.name);
    if (e.isDirectory) yield* markdownFiles(p);
    else if (e.name.endsWith(".md")) yield p;
  }
}

/** Every ```sh block of README.md and docs/, with whether the line before it (blank lines aside) is the marker. */
function shBlocks(): (Snippet & { marked: boolean })[] {
  const out: (Snippet & { marked: boolean })[] = [];
  for (const file of [join(repoRoot, "README.md"), ...markdownFiles(join(repoRoot, "docs"))]) {
    const lines = Deno.readTextFileSync(file).split("\n");
    for (let i = 0; i < lines.length; i++) {
      if (lines[i].trim() !== "```sh") continue;
      let end = i + 1;
      while (end < lines.length && lines[end].trim() !== "```") end++;
      let before = i - 1;
      while (before >= 0 && lines[before].trim() === "") before--;
      out.push({
        where: `${relative(repoRoot, file)}:${i + 1}`,
        text: lines.slice(i + 1, end).join("\n") + "\n",
        marked: before >= 0 && lines[before].trim() === MARKER,
      });
      i = end;
    }
  }
  return out;
}

const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** The repository the release workflow publishes to, from its image (ghcr.io/<owner>/<repo>). */
function releaseFacts(): { repository: string; image: string; assets: string[] } {
  const workflow = Deno.readTextFileSync(join(repoRoot, ".github/workflows/release.yml"));
  const image = /^\s+IMAGE: (ghcr\.io\/\S+)$/m.exec(workflow)?.[1];
  assert.ok(image, "release.yml sets IMAGE");
  const create = workflow.slice(workflow.indexOf("gh release create"));
  const assets = [...create.matchAll(/dist\/([\w.-]+)/g)].map((m) => m[1]);
  assert.ok(assets.includes("SHA256SUMS") && assets.includes("espejo-linux-amd64"), create);
  return { repository: image.slice("ghcr.io/".length), image, assets };
}

/** `espejo` (main.ts with the shipped flags), a `curl` and a `docker` stand-in, in one directory for PATH. */
async function toolsDir(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "espejo-snippet-bin-" });
  const info = await new Deno.Command(Deno.execPath(), { args: ["info", "--json"], stdout: "piped" }).output();
  const denoDir = Deno.env.get("DENO_DIR") ?? (JSON.parse(new TextDecoder().decode(info.stdout)).denoDir as string);
  const espejo = join(dir, "espejo");
  const flags = [...shippedFlags(), "--config", join(repoRoot, "deno.json")];
  await Deno.writeTextFile(
    espejo,
    [
      "#!/bin/sh",
      "# espejo from source, with the permissions and V8 flags the binary and the image are compiled with",
      `export DENO_DIR=${quote(denoDir)}`,
      `exec ${quote(Deno.execPath())} run ${flags.map(quote).join(" ")} ${quote(join(repoRoot, "main.ts"))} "$@"`,
      "",
    ].join("\n"),
  );
  await Deno.chmod(espejo, 0o755);

  const facts = releaseFacts();
  const release = join(dir, "release");
  await Deno.mkdir(release);
  const sums: string[] = [];
  for (const asset of facts.assets.filter((a) => a !== "SHA256SUMS")) {
    const content = asset === "espejo-linux-amd64"
      ? await Deno.readFile(espejo)
      : new TextEncoder().encode(`${asset}: not built here\n`);
    await Deno.writeFile(join(release, asset), content);
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", content));
    sums.push(`${Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("")}  ${asset}`);
  }
  await Deno.writeTextFile(join(release, "SHA256SUMS"), sums.join("\n") + "\n");
  const base = `https://github.com/${facts.repository}/releases/download/v${VERSION}/`;
  await Deno.writeTextFile(
    join(dir, "curl"),
    [
      "#!/usr/bin/env bash",
      "# curl stand-in: -O of a file the release workflow publishes for this version; anything else fails as curl -f",
      "set -euo pipefail",
      'url=""; remote_name=""',
      'for a in "$@"; do case "$a" in --remote-name) remote_name=1 ;; -*O*) remote_name=1 ;; -*) ;; *) url=$a ;; esac; done',
      `base=${quote(base)}`,
      '[ -n "$remote_name" ] || { echo "curl stand-in: only -O (save under the remote name)" >&2; exit 2; }',
      'case "$url" in "$base"*) name=${url#"$base"} ;; *) echo "curl: (22) $url: not a file of the release" >&2; exit 22 ;; esac',
      `[ -f ${quote(release)}/"$name" ] || { echo "curl: (22) The requested URL returned error: 404" >&2; exit 22; }`,
      `cp ${quote(release)}/"$name" "./$name"`,
      "",
    ].join("\n"),
  );
  const imageEnv = Object.entries(imageEnvironment()).map(([k, v]) => quote(`${k}=${v}`)).join(" ");
  await Deno.writeTextFile(
    join(dir, "docker"),
    [
      "#!/usr/bin/env bash",
      "# docker stand-in: run [--rm] [--network N] [--user U] [-v HOST:CTR[:ro]]... [-e K=V]... IMAGE ARGS...",
      "set -euo pipefail",
      '[ "${1:-}" = run ] || { echo "docker stand-in: only run" >&2; exit 125; }',
      "shift",
      "mounts=(); vars=()",
      "while [ $# -gt 0 ]; do",
      '  case "$1" in',
      "    --rm) shift ;;",
      "    --network | --user | -u) shift 2 ;;",
      '    -v | --volume) mounts+=("$2"); shift 2 ;;',
      '    -e | --env) vars+=("$2"); shift 2 ;;',
      '    -*) echo "docker stand-in: unknown flag $1" >&2; exit 125 ;;',
      "    *) break ;;",
      "  esac",
      "done",
      `[ "$1" = ${quote(`${facts.image}:v${VERSION}`)} ] || { echo "docker: no image $1 is published" >&2; exit 125; }`,
      "shift",
      'for m in "${mounts[@]}"; do',
      "  host=${m%%:*}",
      '  case "$host" in /*) ;; *) echo "docker: $host is not an absolute path (a volume name)" >&2; exit 125 ;; esac',
      '  [ -e "$host" ] || { echo "docker: bind source $host does not exist" >&2; exit 125; }',
      "done",
      "map() {",
      "  local s=$1 m host rest ctr",
      '  for m in "${mounts[@]}"; do',
      "    host=${m%%:*}; rest=${m#*:}; ctr=${rest%%:*}",
      '    if [ "$s" = "$ctr" ] || [ "${s#"$ctr"/}" != "$s" ]; then s=$host${s#"$ctr"}; fi',
      "  done",
      "  printf '%s' \"$s\"",
      "}",
      'args=(); for a in "$@"; do args+=("$(map "$a")"); done',
      'env=(); for v in "${vars[@]}"; do env+=("${v%%=*}=$(map "${v#*=}")"); done',
      "cd /",
      `exec env -i ${imageEnv} "\${env[@]}" ${quote(espejo)} "\${args[@]}"`,
      "",
    ].join("\n"),
  );
  await Deno.chmod(join(dir, "curl"), 0o755);
  await Deno.chmod(join(dir, "docker"), 0o755);
  return dir;
}

/** The repository a pipeline checks out: syncconfigs/ (a kustomize base) and overlays/prod. */
async function repository(syncConfig: unknown): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "espejo-snippet-repo-" });
  await Deno.mkdir(join(dir, "syncconfigs"));
  await Deno.mkdir(join(dir, "overlays", "prod"), { recursive: true });
  await Deno.writeTextFile(join(dir, "syncconfigs", "tenant-defaults.yaml"), JSON.stringify(syncConfig, null, 2));
  const kustomization = ["apiVersion: kustomize.config.k8s.io/v1beta1", "kind: Kustomization"];
  await Deno.writeTextFile(
    join(dir, "syncconfigs", "kustomization.yaml"),
    [...kustomization, "resources: [tenant-defaults.yaml]", ""].join("\n"),
  );
  await Deno.writeTextFile(
    join(dir, "overlays", "prod", "kustomization.yaml"),
    [...kustomization, `namespace: ${CONTROLLER_NAMESPACE}`, "resources: [../../syncconfigs]", ""].join("\n"),
  );
  return dir;
}

async function runSnippet(
  snippet: Snippet,
  cwd: string,
  env: Record<string, string>,
): Promise<{ code: number; out: string }> {
  const script = join(cwd, "snippet.sh");
  await Deno.writeTextFile(script, snippet.text);
  const out = await new Deno.Command("bash", {
    args: ["-e", "-o", "pipefail", script],
    cwd,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, out: `${dec.decode(out.stdout)}\n--- stderr ---\n${dec.decode(out.stderr)}` };
}

Deno.test("every sh block of README.md and docs/ that runs espejo plan is marked as a pipeline snippet", () => {
  const blocks = shBlocks();
  // A session transcript (`$ espejo plan ...` and its output) is an example to read, not a script.
  const unmarked = blocks.filter((b) => !b.marked && /\bplan\b/.test(b.text) && !/^\$ /m.test(b.text));
  assert.deepEqual(unmarked.map((b) => b.where), []);
  assert.ok(blocks.filter((b) => b.marked).length >= 5, "docs/plan-ci.md's five snippets");
});

Deno.test(
  "the pipeline snippets pass where nothing or something would change, and fail on an Invalid SyncConfig",
  opts,
  async (t) => {
    const snippets = shBlocks().filter((b) => b.marked);
    const c = await testCluster();
    const admin = clientFor(c);
    const id = uniqueName("snip");
    const targets = [`${id}-a`, `${id}-b`];
    const syncConfig = (tier: string, matchNames = [`${id}-.*`]) => ({
      apiVersion: "sync.appuio.ch/v1alpha1",
      kind: "SyncConfig",
      metadata: { name: id },
      spec: {
        namespaceSelector: { matchNames },
        syncItems: [{
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: "tenant-info" },
          data: { namespace: "${PROJECT_NAME}", tier },
        }],
      },
    });
    const kubeconfig = await Deno.makeTempFile({ suffix: ".kubeconfig" });
    await Deno.writeTextFile(kubeconfig, kubeconfigYaml(c.server, c.caPem, c.admin));
    const tools = await toolsDir();
    const env = {
      PATH: `${tools}:${Deno.env.get("PATH")}`,
      HOME: Deno.env.get("HOME") ?? "/tmp",
      KUBECONFIG: kubeconfig,
    };
    const scPath = `/apis/sync.appuio.ch/v1alpha1/namespaces/${CONTROLLER_NAMESPACE}/syncconfigs/${id}`;
    try {
      // The cluster as the controller of deploy/ left it: the SyncConfig in espejo-system, synced everywhere.
      const controller = await startController(c, { watchNamespace: CONTROLLER_NAMESPACE });
      try {
        for (const ns of targets) await createNamespace(admin, ns);
        const sc = syncConfig("silver");
        await admin.request({
          method: "POST",
          path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${CONTROLLER_NAMESPACE}/syncconfigs`,
          body: { ...sc, metadata: { ...sc.metadata, namespace: CONTROLLER_NAMESPACE } },
        });
        await eventually(
          async () => {
            for (const ns of targets) {
              const cm = await getObject(admin, `/api/v1/namespaces/${ns}/configmaps/tenant-info`);
              if (cm?.data?.tier !== "silver") return false;
            }
            return (await statusOf(admin, CONTROLLER_NAMESPACE, id)).synchronizedItemCount === 2;
          },
          60_000,
          "the SyncConfig to be synced into both namespaces",
        );
      } finally {
        await controller.stop();
      }

      const situations = [
        { name: "nothing would change", file: syncConfig("silver"), code: 0, plan: false },
        { name: "something would change", file: syncConfig("gold"), code: 0, plan: true },
        { name: "an Invalid SyncConfig", file: syncConfig("gold", [`${id}-(`]), code: 1, plan: false },
      ];
      for (const s of situations) {
        await t.step(s.name, async () => {
          for (const snippet of snippets) {
            const repo = await repository(s.file);
            try {
              const run = await runSnippet(snippet, repo, env);
              const what = `${snippet.where}, ${s.name}:\n${snippet.text}${run.out}`;
              assert.equal(run.code, s.code, what);
              // The plan is shown where something would change (text or the JSON summary), and only there.
              const shown = /update\s+ConfigMap tenant-info/.test(run.out) || /"update": 2\b/.test(run.out);
              assert.equal(shown, s.plan, what);
              if (s.code === 1) assert.match(run.out, /not a valid regular expression|Invalid/, what);
            } finally {
              await Deno.remove(repo, { recursive: true });
            }
          }
        });
      }
    } finally {
      await admin.request({ method: "DELETE", path: scPath }).catch(() => {});
      for (const ns of targets) {
        await admin.request({ method: "DELETE", path: `/api/v1/namespaces/${ns}` }).catch(
          () => {},
        );
      }
      admin.close();
      await Deno.remove(tools, { recursive: true });
      await Deno.remove(kubeconfig);
    }
  },
);
