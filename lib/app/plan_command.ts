/**
 * `espejo plan`: what the controller would do now, without doing it. Reads the cluster with lists only, takes the
 * SyncConfigs from the cluster and from `-f` files (a file's SyncConfig replaces the one with the same
 * namespace/name, as an edit would), and prints per SyncConfig and namespace what would be created, adopted,
 * updated (with the fields), recreated, deleted, pruned, or would fail. Exit code 0: nothing would change; 2:
 * something would; 1: an error, an Invalid SyncConfig or an item that would fail.
 */
import { Command, Option } from "commander";
import { parseAllDocuments } from "yaml";
import { HttpKubeClient } from "../kube/client.ts";
import { loadClientOptions } from "../kube/kubeconfig.ts";
import { isObject } from "../kube/objects.ts";
import { decodeSyncConfig } from "../controller/syncconfig_api.ts";
import type { SyncConfig } from "../model/syncconfig.ts";
import { dryRun } from "../plan/dry_run.ts";
import { planSnapshot } from "../plan/plan.ts";
import { exitCodeOf, type PlanReport, renderJson, renderText } from "../plan/render.ts";
import { missingRights, neededRights } from "../plan/rights.ts";
import { takeSnapshot } from "../plan/snapshot.ts";
import { namespaceNameProblem } from "./config.ts";

const DEFAULT_IDENTITY = "system:serviceaccount:espejo-system:espejo";

function buildPlanCommand(): Command {
  const collect = (v: string, all: string[]) => [...all, v];
  return new Command("espejo plan")
    .description(
      "Shows what espejo would do now, and changes nothing. SyncConfigs come from the cluster (WATCH_NAMESPACE " +
        "limits them to one namespace) and from -f files.\nExit code: 0 nothing would change, 2 something would, " +
        "1 on an error, an Invalid SyncConfig or an item that would fail.",
    )
    .helpOption("-h, --help", "show this help and exit")
    .addOption(
      new Option("-f, --filename <file>", "a YAML or JSON file of SyncConfigs, used as if applied (repeatable)")
        .argParser(collect).default([]),
    )
    .addOption(new Option("-o, --output <format>", "output format").choices(["text", "json"]).default("text"))
    .addOption(
      new Option("-n, --namespace <namespace>", "plan only this target namespace (repeatable)").argParser(collect)
        .default([]),
    )
    .addOption(
      new Option(
        "--server-dry-run",
        "send every write with dryRun=All, so that admission and validation errors show up (nothing is stored)",
      ).default(false),
    )
    .addOption(new Option("--prune-default", "as the controller's --prune-default").default(false))
    .addOption(new Option("--kubeconfig <path>", "kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)"))
    .addOption(
      new Option("--controller-identity <user>", "the controller's user, whose rights are reviewed").default(
        DEFAULT_IDENTITY,
      ),
    );
}

/** The SyncConfigs of a file; anything else in it is an error that names the file and the document. */
export function syncConfigsOfFile(text: string, file: string, watchNamespace: string): SyncConfig[] {
  const out: SyncConfig[] = [];
  parseAllDocuments(text).forEach((doc, i) => {
    if (doc.errors.length) throw new Error(`${file}: document ${i + 1}: ${withoutExcerpt(doc.errors[0].message)}`);
    const value = doc.toJSON();
    if (value === null || value === undefined) return;
    if (!isObject(value) || value.apiVersion !== "sync.appuio.ch/v1alpha1" || value.kind !== "SyncConfig") {
      throw new Error(`${file}: document ${i + 1} is not a SyncConfig (sync.appuio.ch/v1alpha1)`);
    }
    const meta = isObject(value.metadata) ? value.metadata : {};
    const namespace = typeof meta.namespace === "string" && meta.namespace ? meta.namespace : watchNamespace;
    if (!namespace) {
      throw new Error(`${file}: document ${i + 1} has no metadata.namespace (and WATCH_NAMESPACE is empty)`);
    }
    if (watchNamespace && namespace !== watchNamespace) {
      throw new Error(
        `${file}: document ${i + 1} is in namespace ${namespace}; the controller reads only ${watchNamespace}`,
      );
    }
    const sc = decodeSyncConfig({ ...value, metadata: { ...meta, namespace } });
    if (!sc) throw new Error(`${file}: document ${i + 1} has no valid metadata.name`);
    out.push(sc);
  });
  return out;
}

/**
 * A YAML error's message without the excerpt of the file that follows its first line: the line may be a Secret's
 * value. Line and column stay.
 */
function withoutExcerpt(message: string): string {
  return message.split("\n", 1)[0].replace(/:$/, "");
}

export async function runPlan(args: string[], env: Record<string, string | undefined>): Promise<number> {
  const cmd = buildPlanCommand();
  cmd.parse(args, { from: "user" });
  const o = cmd.opts();
  const watchNamespace = (env.WATCH_NAMESPACE ?? "").trim();
  const progress = (line: string) => console.error(line);
  let client: HttpKubeClient | undefined;
  try {
    if (watchNamespace && namespaceNameProblem(watchNamespace)) {
      throw new Error(`WATCH_NAMESPACE ${JSON.stringify(watchNamespace)} is not a namespace name`);
    }
    const files = [];
    const filenames: string[] = o.filename;
    for (const file of filenames) {
      for (const syncConfig of syncConfigsOfFile(await Deno.readTextFile(file), file, watchNamespace)) {
        files.push({ syncConfig, source: file });
      }
    }
    client = new HttpKubeClient({ ...(await loadClientOptions(o.kubeconfig)), userAgent: "espejo-plan" });
    const snapshot = await takeSnapshot(client, { watchNamespace, files, namespaces: o.namespace, progress });
    const result = await planSnapshot(snapshot, o.pruneDefault === true);
    if (o.serverDryRun) {
      for (const c of result.configs) {
        const done = await dryRun(client, c.entries, progress);
        c.entries = done.entries;
        result.unchanged += done.noops;
      }
    }
    const rights = await missingRights(client, o.controllerIdentity, neededRights(snapshot, result.configs));
    const report: PlanReport = { ...result, controller: { identity: o.controllerIdentity, ...rights } };
    console.log(o.output === "json" ? renderJson(report) : renderText(report));
    return exitCodeOf(report);
  } catch (e) {
    console.error(`espejo plan: error: ${e instanceof Error ? e.message : e}`);
    return 1;
  } finally {
    client?.close();
  }
}
