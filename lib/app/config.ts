/**
 * Command-line flags and environment, compatible with the Go espejo (`--reconcile-interval`, `--metrics-addr`,
 * `--enable-leader-election`, `-v/--verbose`, `WATCH_NAMESPACE`); everything else is an addition. Flags are read as
 * Go's pflag reads them (lib/app/flags.ts).
 */
import { FlagError, type FlagSpec, invalidValue, parseFlags, usage } from "./flags.ts";
import { goDuration, type ListenAddr, parseListenAddr, positiveNumber, wholeAtLeastOne } from "./flag_values.ts";
import { findSubcommand, firstCommandWord, strayWords, SUBCOMMANDS, unknownCommand } from "./subcommands.ts";
import { namespaceNameProblem, parseNamespaceList } from "./namespace_names.ts";

export { FlagError, type ListenAddr, namespaceNameProblem, parseListenAddr };

export interface Config {
  reconcileIntervalMs: number;
  /** How long a namespace found in sync is skipped by passes; 0: compare every namespace in every pass. */
  fullCompareIntervalMs: number;
  metricsAddr: ListenAddr | undefined;
  /** Serve /metrics over HTTPS to authenticated and authorized scrapers only (`--metrics-secure`). */
  metricsSecure: boolean;
  /** Directory with `tls.crt` and `tls.key` for `--metrics-secure`; undefined: a self-signed certificate. */
  metricsCertPath: string | undefined;
  healthAddr: ListenAddr | undefined;
  enableLeaderElection: boolean;
  leaderElectionNamespace: string | undefined;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  verbose: boolean;
  kubeconfig: string | undefined;
  logFormat: "text" | "json";
  kubeApiQps: number;
  kubeApiBurst: number;
  concurrentSyncs: number;
  watchNamespace: string;
  /** Pruning for SyncConfigs without a `sync.appuio.ch/prune` annotation (`--prune-default`). */
  pruneDefault: boolean;
  /** Delegated mode: the namespaces whose SyncConfigs may write as espejo (`--trusted-namespaces`); undefined: off. */
  trustedNamespaces: string[] | undefined;
}

const DESCRIPTION =
  "Copies objects into many namespaces as SyncConfig resources (sync.appuio.ch/v1alpha1) describe.\n" +
  "Environment: WATCH_NAMESPACE limits which SyncConfigs are read to one namespace (empty: all);\n" +
  "TRUSTED_NAMESPACES is --trusted-namespaces' default;\n" +
  "KUBECONFIG is used when --kubeconfig is not given (then the in-cluster service account, then ~/.kube/config).\n" +
  "Subcommand: `espejo plan` shows what espejo would change, and changes nothing (`espejo plan --help`).";

/** Every flag, with its parser and default (the value a flag has when not given). */
const FLAGS = {
  "reconcile-interval": {
    placeholder: "duration",
    help: "how often every SyncConfig is synced against every namespace (Go duration: 10s, 1m30s); 0 turns the " +
      "passes off (events only, as in the Go espejo)",
    defaultText: "10s",
    parse: (v: string) => goDuration(v, true),
  },
  "full-compare-interval": {
    placeholder: "duration",
    help: "how long a pass skips a namespace whose last sync changed nothing and whose inputs did not change since; " +
      "0 compares every namespace in every pass",
    defaultText: "10m",
    parse: (v: string) => goDuration(v, true),
  },
  "metrics-addr": {
    placeholder: "addr",
    help: "address of the Prometheus /metrics endpoint; 0 disables it",
    defaultText: ":8080",
    parse: parseListenAddr,
  },
  "metrics-secure": {
    help: "serve /metrics over HTTPS, only to a bearer token that a TokenReview authenticates and a " +
      "SubjectAccessReview allows to get /metrics (controller-runtime's secure metrics); off, as in the Go espejo",
  },
  "metrics-cert-path": {
    placeholder: "dir",
    help: "directory holding tls.crt and tls.key for --metrics-secure (default: a self-signed certificate)",
  },
  "health-addr": {
    placeholder: "addr",
    help: "address of the /healthz and /readyz probes; 0 disables them",
    defaultText: ":8081",
    parse: parseListenAddr,
  },
  "enable-leader-election": {
    help: "run as one of several replicas: only the holder of the Lease bd39f6a0.appuio.ch writes",
  },
  "leader-election-namespace": {
    placeholder: "namespace",
    help: "namespace of the leader Lease (default: the pod's namespace)",
  },
  "lease-duration": {
    placeholder: "duration",
    help: "how long a Lease is valid without renewal",
    defaultText: "15s",
    parse: (v: string) => goDuration(v),
  },
  "renew-deadline": {
    placeholder: "duration",
    help: "how long the leader retries renewing before it gives up",
    defaultText: "10s",
    parse: (v: string) => goDuration(v),
  },
  "retry-period": {
    placeholder: "duration",
    help: "how often leader election is attempted or renewed",
    defaultText: "2s",
    parse: (v: string) => goDuration(v),
  },
  verbose: { short: "v", help: "log at debug level" },
  kubeconfig: { placeholder: "path", help: "kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)" },
  "log-format": {
    placeholder: "format",
    help: "log format: text or json",
    defaultText: "text",
    parse: (v: string) => {
      if (v !== "text" && v !== "json") throw new Error(`"${v}" is not one of text, json`);
      return v;
    },
  },
  "kube-api-qps": {
    placeholder: "qps",
    help: "requests per second to the API server, sustained (watches excluded)",
    defaultText: "50",
    parse: positiveNumber,
  },
  "kube-api-burst": {
    placeholder: "requests",
    help: "requests to the API server allowed in a burst above --kube-api-qps",
    defaultText: "100",
    parse: (v: string) => {
      const n = positiveNumber(v);
      if (n < 1) throw new Error(`"${v}" is less than 1: no request could ever be sent`);
      return n;
    },
  },
  "concurrent-syncs": {
    placeholder: "n",
    help: "namespaces synced at the same time (never the same namespace twice); more converge a new SyncConfig faster",
    defaultText: "4",
    parse: wholeAtLeastOne,
  },
  "prune-default": {
    help: 'prune for every SyncConfig without a sync.appuio.ch/prune annotation (one with "false" never prunes): ' +
      "delete the objects espejo created for it when an item is removed, a namespace is no longer selected, or " +
      "the SyncConfig is deleted",
  },
  "trusted-namespaces": {
    placeholder: "namespaces",
    help: "delegated mode: only SyncConfigs of these namespaces (comma-separated) may write as espejo; one " +
      "elsewhere writes as the ServiceAccount of its namespace that its annotation sync.appuio.ch/service-account " +
      "names, and is Invalid without it (docs/delegation.md). Default: $TRUSTED_NAMESPACES; empty: off",
  },
  version: { help: "print the version and exit" },
  help: { short: "h", help: "show this help and exit" },
} satisfies Record<string, Omit<FlagSpec, "name"> & { parse?: (v: string) => unknown }>;

/** The Go espejo v0.5.0's flags (its main.go, loadConfig): a command line written for it runs here as it ran there. */
const GO_ESPEJO_FLAGS: ReadonlySet<string> = new Set<FlagName>([
  "metrics-addr",
  "enable-leader-election",
  "reconcile-interval",
  "verbose",
]);

type FlagName = keyof typeof FLAGS;
/** The flags that take a value with a default. */
type ValueFlag = {
  [N in FlagName]: (typeof FLAGS)[N] extends { parse: unknown; defaultText: string } ? N : never;
}[FlagName];
const SPECS: FlagSpec[] = Object.entries(FLAGS).map(([name, f]) => ({ name, ...f }));

/**
 * What a command line asks for: run with a config (and the warnings to log once logging is set up), or print a text
 * (help, version) and exit 0.
 */
export type CommandLine = { run: Config; warnings: string[] } | { print: string };

/** The subcommand a command line names (flags may stand before it), judged by the controller's flags; see main.ts. */
export function subcommandOf(args: readonly string[]): ReturnType<typeof findSubcommand> {
  return findSubcommand(SPECS, args);
}

/**
 * Reads flags and environment. A bad flag, a bad value or a `WATCH_NAMESPACE` that is not a namespace name throws a
 * {@link FlagError} with a one-line reason (main.ts prints it and exits with its code).
 */
export function readCommandLine(
  args: string[],
  env: Record<string, string | undefined>,
  version = "dev",
): CommandLine {
  // cobra finds the command before it parses flags: `espejo plna -f a.yaml` is an unknown command, not an unknown -f.
  const first = firstCommandWord(SPECS, args);
  if (first && SUBCOMMANDS.some((c) => c === first.word)) {
    throw new Error(`readCommandLine: "${first.word}" is a subcommand, which main.ts runs instead (subcommandOf)`);
  }
  if (first) throw new FlagError(unknownCommand(first.word, first.afterBoolean));
  const { values, positional } = parseFlags(SPECS, args);
  if (values.get("help") === true) return { print: usage("espejo", DESCRIPTION, SPECS) };
  if (values.get("version") === true) return { print: version };
  const warnings = strayWords(positional, GO_ESPEJO_FLAGS);
  const text = (name: FlagName) => {
    const v = values.get(name);
    return typeof v === "string" ? v : undefined;
  };
  // A flag's value through its parser: the one given, or its default (the help's default text, so both agree).
  const flag = <N extends ValueFlag>(name: N): ReturnType<(typeof FLAGS)[N]["parse"]> => {
    const spec: FlagSpec & { parse: (v: string) => unknown } = { name, ...FLAGS[name] };
    const value = text(name) ?? spec.defaultText!;
    try {
      return spec.parse(value) as ReturnType<(typeof FLAGS)[N]["parse"]>;
    } catch (e) {
      throw invalidValue(spec, value, (e as Error).message);
    }
  };
  const watchNamespace = (env.WATCH_NAMESPACE ?? "").trim();
  const namespaceProblem = watchNamespace ? namespaceNameProblem(watchNamespace) : undefined;
  if (namespaceProblem) {
    throw new FlagError(
      `environment variable WATCH_NAMESPACE ${JSON.stringify(watchNamespace)} is not a namespace name: ` +
        `${namespaceProblem} (leave it empty to read SyncConfigs from all namespaces)`,
    );
  }
  const trusted = text("trusted-namespaces") ?? env.TRUSTED_NAMESPACES ?? "";
  let trustedNamespaces: string[] | undefined;
  try {
    trustedNamespaces = parseNamespaceList(trusted);
  } catch (e) {
    const source = text("trusted-namespaces") === undefined
      ? "environment variable TRUSTED_NAMESPACES"
      : "--trusted-namespaces";
    throw new FlagError(`${source} ${JSON.stringify(trusted)}: ${(e as Error).message}`);
  }
  return {
    run: {
      reconcileIntervalMs: flag("reconcile-interval"),
      fullCompareIntervalMs: flag("full-compare-interval"),
      metricsAddr: flag("metrics-addr"),
      metricsSecure: values.get("metrics-secure") === true,
      metricsCertPath: text("metrics-cert-path"),
      healthAddr: flag("health-addr"),
      enableLeaderElection: values.get("enable-leader-election") === true,
      leaderElectionNamespace: text("leader-election-namespace"),
      leaseDurationMs: flag("lease-duration"),
      renewDeadlineMs: flag("renew-deadline"),
      retryPeriodMs: flag("retry-period"),
      verbose: values.get("verbose") === true,
      kubeconfig: text("kubeconfig"),
      logFormat: flag("log-format"),
      kubeApiQps: flag("kube-api-qps"),
      kubeApiBurst: flag("kube-api-burst"),
      concurrentSyncs: flag("concurrent-syncs"),
      watchNamespace,
      pruneDefault: values.get("prune-default") === true,
      trustedNamespaces,
    },
    warnings,
  };
}

/** {@link readCommandLine} for a command line that runs the controller (tests); help or version is an error. */
export function parseConfig(args: string[], env: Record<string, string | undefined>): Config {
  const line = readCommandLine(args, env);
  if ("print" in line) throw new FlagError("--help and --version print, they do not run");
  return line.run;
}
