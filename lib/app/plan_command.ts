/**
 * `espejo plan`: what the controller would do now, without doing it. Reads the cluster with lists only, takes the
 * SyncConfigs the controller reads (WATCH_NAMESPACE, or --watch-namespace) and those of `-f` (read as `kubectl apply
 * -f` reads them; a file's SyncConfig replaces the one with the same namespace/name, as an apply would), and prints
 * per SyncConfig and namespace what would be created, adopted, updated (with the fields), recreated, deleted,
 * pruned, or would fail. With `-f`, as `kubectl diff -f`, only the files' SyncConfigs are planned (the others are
 * context); `--all` plans every one. Writes are compared by a server-side dry run where the identity may, else by
 * espejo's rules. Exit code, of what is planned: 0 nothing would change; 2 something would; 1 an error, an Invalid
 * SyncConfig or an item that would fail.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { HttpKubeClient } from "../kube/client.ts";
import { loadClientOptions } from "../kube/kubeconfig.ts";
import type { SyncConfig } from "../model/syncconfig.ts";
import { byRules, type Comparison, currentUser, dryRunRefusal } from "../plan/comparison.ts";
import { contextNamespace } from "../plan/context_namespace.ts";
import { dryRun } from "../plan/dry_run.ts";
import { type NamespaceRule, readManifests } from "../plan/input.ts";
import { planSnapshot } from "../plan/plan.ts";
import { exitCodeOf, type PlanReport, renderJson, renderText } from "../plan/render.ts";
import { missingRights, neededRights } from "../plan/rights.ts";
import { reviewServiceAccounts } from "../plan/service_account_review.ts";
import { serviceAccountRights } from "../plan/service_account_rights.ts";
import { takeSnapshot } from "../plan/snapshot.ts";
import { readSources } from "../plan/sources.ts";
import { namespaceNameProblem } from "./config.ts";
import { parseNamespaceList } from "./namespace_names.ts";

const DEFAULT_IDENTITY = "system:serviceaccount:espejo-system:espejo";
const TRUE_SPELLINGS = new Set(["1", "t", "T", "TRUE", "true", "True"]);
const FALSE_SPELLINGS = new Set(["0", "f", "F", "FALSE", "false", "False"]);

/** A boolean flag as pflag reads it: `--name`, or `--name=` one of strconv.ParseBool's spellings. */
function booleanFlag(name: string, help: string): Option {
  return new Option(`--${name} [bool]`, help).argParser((v: string) => {
    if (TRUE_SPELLINGS.has(v)) return true;
    if (FALSE_SPELLINGS.has(v)) return false;
    throw new InvalidArgumentError("not a boolean (true or false)");
  });
}

function buildPlanCommand(): Command {
  const collect = (v: string, all: string[]) => [...all, v];
  return new Command("espejo plan")
    .description(
      "Shows what espejo would do now, and changes nothing. SyncConfigs come from the cluster (those the controller " +
        "reads: WATCH_NAMESPACE or --watch-namespace) and from -f, read as kubectl apply -f reads them.\n" +
        "With -f, as kubectl diff -f, only the SyncConfigs of the files are planned: the others are read as context " +
        "(contradictions, objects they hold), not shown; --all plans them too. Without -f, every one is planned.\n" +
        "Writes are compared by a server-side dry run where the identity running the plan may make them, else by " +
        "espejo's rules; the output says which.\n" +
        "Exit code, of what is planned: 0 nothing would change, 2 something would, 1 an error, an Invalid SyncConfig " +
        "or an item that would fail.",
    )
    .helpOption("-h, --help", "show this help and exit")
    .allowExcessArguments(false)
    .addOption(
      new Option(
        "-f, --filename <path>",
        "a YAML or JSON file (several documents, a v1 List), a directory of *.yaml, *.yml, *.json files, or - " +
          "for stdin; used as if applied (repeatable; kinds other than SyncConfig are ignored)",
      ).argParser(collect).default([]),
    )
    .addOption(new Option("-R, --recursive", "read the directories of -f recursively").default(false))
    .addOption(
      new Option("--all", "with -f, plan every SyncConfig the controller reads too, not only the files'").default(
        false,
      ),
    )
    .addOption(
      new Option(
        "-n, --namespace <namespace>",
        "the namespace of -f's SyncConfigs that name none (default: WATCH_NAMESPACE or --watch-namespace when set, " +
          "else the kubeconfig context's, else default)",
      ),
    )
    .addOption(
      new Option(
        "--watch-namespace <namespace>",
        "read the SyncConfigs of this namespace only, as the controller with WATCH_NAMESPACE (default: " +
          "$WATCH_NAMESPACE; empty: every namespace)",
      ),
    )
    .addOption(
      new Option(
        "--trusted-namespaces <namespaces>",
        "as the controller's --trusted-namespaces (delegated mode): only SyncConfigs of these namespaces " +
          "(comma-separated) may write as espejo; one elsewhere writes as the ServiceAccount its annotation " +
          "sync.appuio.ch/service-account names, and is Invalid without it (default: $TRUSTED_NAMESPACES; empty: off)",
      ),
    )
    .addOption(new Option("-o, --output <format>", "output format").choices(["text", "json"]).default("text"))
    .addOption(
      new Option("--target-namespace <namespace>", "plan only this target namespace (repeatable)").argParser(collect)
        .default([]),
    )
    .addOption(
      booleanFlag(
        "server-dry-run",
        "compare by sending every write with dryRun=All (admission and validation show up, nothing is stored); " +
          "=false compares by espejo's rules (default: a dry run where the identity may)",
      ),
    )
    .addOption(
      booleanFlag(
        "check-rights",
        "review the rights of --controller-identity for this plan, and of each ServiceAccount a planned SyncConfig " +
          "writes as, in each namespace the plan writes to",
      ).default(false),
    )
    .addOption(
      new Option("--controller-identity <user>", "whose rights --check-rights reviews").default(DEFAULT_IDENTITY),
    )
    .addOption(booleanFlag("prune-default", "as the controller's --prune-default").default(false))
    .addOption(new Option("--kubeconfig <path>", "kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)"));
}

export async function runPlan(args: string[], env: Record<string, string | undefined>): Promise<number> {
  const cmd = buildPlanCommand().exitOverride().configureOutput({
    writeErr: (text) => console.error(text.trimEnd()),
    outputError: (text, write) => write(`espejo plan: ${text}`),
  });
  try {
    cmd.parse(args, { from: "user" });
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === "commander.helpDisplayed" || e.code === "commander.help") return 0;
      return 1;
    }
    throw e;
  }
  const o = cmd.opts();
  const watchNamespace = String(o.watchNamespace ?? env.WATCH_NAMESPACE ?? "").trim();
  const progress = (line: string) => console.error(line);
  let client: HttpKubeClient | undefined;
  try {
    if (watchNamespace && namespaceNameProblem(watchNamespace)) {
      throw new Error(`WATCH_NAMESPACE ${JSON.stringify(watchNamespace)} is not a namespace name`);
    }
    if (o.namespace !== undefined && namespaceNameProblem(o.namespace)) {
      throw new Error(`-n ${JSON.stringify(o.namespace)} is not a namespace name`);
    }
    const trusted = trustedNamespaces(o.trustedNamespaces, env);
    const files = await syncConfigsOfFiles(o.filename, o.recursive === true, {
      flag: o.namespace,
      watch: watchNamespace || undefined,
      context: contextNamespace(o.kubeconfig, env),
    }, watchNamespace);
    client = new HttpKubeClient({ ...(await loadClientOptions(o.kubeconfig)), userAgent: "espejo-plan" });
    const snapshot = await takeSnapshot(client, {
      watchNamespace,
      files,
      namespaces: o.targetNamespace,
      progress,
    });
    const result = await planSnapshot(snapshot, o.pruneDefault === true, {
      files: o.filename.length > 0,
      all: o.all === true,
    }, { trustedNamespaces: trusted?.namespaces });
    const user = await currentUser(client);
    const comparison = await chooseComparison(client, o.serverDryRun, result.configs.flatMap((c) => c.entries), user);
    for (const c of result.configs) {
      const done = comparison.mode === "server-dry-run"
        ? await dryRun(client, c.entries, progress)
        : byRules(c.entries);
      c.entries = done.entries;
      result.unchanged += done.noops;
    }
    const report: PlanReport = {
      ...result,
      syncConfigsFrom: watchNamespace
        ? `namespace ${watchNamespace} (${o.watchNamespace === undefined ? "WATCH_NAMESPACE" : "--watch-namespace"})`
        : "every namespace (WATCH_NAMESPACE is empty; the controller of deploy/ reads only its own namespace)",
      trusted,
      comparison,
    };
    if (o.checkRights === true) {
      const rights = await missingRights(client, o.controllerIdentity, neededRights(snapshot, result.configs));
      report.controller = { identity: o.controllerIdentity, ...rights };
      report.serviceAccounts = await reviewServiceAccounts(client, serviceAccountRights(snapshot, result.configs));
    }
    console.log(o.output === "json" ? renderJson(report) : renderText(report));
    return exitCodeOf(report);
  } catch (e) {
    console.error(`espejo plan: error: ${e instanceof Error ? e.message : e}`);
    return 1;
  } finally {
    client?.close();
  }
}

/** Delegated mode's trusted namespaces, from the flag, else TRUSTED_NAMESPACES, checked as the controller checks them. */
function trustedNamespaces(
  flag: string | undefined,
  env: Record<string, string | undefined>,
): { namespaces: string[]; from: string } | undefined {
  const from = flag === undefined ? "TRUSTED_NAMESPACES" : "--trusted-namespaces";
  const text = flag ?? env.TRUSTED_NAMESPACES ?? "";
  try {
    const namespaces = parseNamespaceList(text);
    return namespaces && { namespaces, from };
  } catch (e) {
    const source = flag === undefined ? "environment variable TRUSTED_NAMESPACES" : "--trusted-namespaces";
    throw new Error(`${source} ${JSON.stringify(text)}: ${(e as Error).message}`);
  }
}

/** The dry run when forced (`true`), the rules when refused (`false`), else a dry run if the user may make it. */
async function chooseComparison(
  client: HttpKubeClient,
  flag: boolean | undefined,
  entries: Parameters<typeof dryRunRefusal>[1],
  user: string,
): Promise<Comparison> {
  if (flag === true) return { mode: "server-dry-run", why: `--server-dry-run, as ${user}` };
  if (!entries.some((e) => e.action !== "fail")) {
    return { mode: "none", why: "every object already is what its item asks" };
  }
  if (flag === false) return { mode: "rules", why: "--server-dry-run=false" };
  const refusal = await dryRunRefusal(client, entries, user);
  return refusal === undefined
    ? { mode: "server-dry-run", why: `as ${user}` }
    : { mode: "rules", why: `no rights to dry-run: ${refusal}` };
}

/** The SyncConfigs of `-f`; the objects of other kinds are named on stderr, in one line. */
async function syncConfigsOfFiles(
  paths: string[],
  recursive: boolean,
  rule: NamespaceRule,
  watchNamespace: string,
): Promise<{ syncConfig: SyncConfig; source: string }[]> {
  const out: { syncConfig: SyncConfig; source: string }[] = [];
  const ignored: string[] = [];
  for (const source of await readSources(paths, recursive)) {
    const content = readManifests(source.text, source.name, rule);
    ignored.push(...content.ignored);
    for (const syncConfig of content.syncConfigs) {
      const namespace = syncConfig.metadata!.namespace!;
      if (watchNamespace && namespace !== watchNamespace) {
        throw new Error(
          `${source.name}: SyncConfig ${namespace}/${syncConfig.metadata?.name} is in namespace ${namespace}, ` +
            `where the controller does not read: it reads only ${watchNamespace} (WATCH_NAMESPACE); set ` +
            `metadata.namespace or -n`,
        );
      }
      out.push({ syncConfig, source: source.name });
    }
  }
  if (paths.length && !out.length && !ignored.length) throw new Error("no objects passed to plan (-f names none)");
  if (ignored.length) {
    const shown = ignored.slice(0, 5).join(", ") + (ignored.length > 5 ? `, and ${ignored.length - 5} more` : "");
    console.error(`espejo plan: ignoring ${ignored.length} object(s) that are not SyncConfigs: ${shown}`);
  }
  return out;
}
