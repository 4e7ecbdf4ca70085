/**
 * Command-line flags and environment, compatible with the Go espejo (`--reconcile-interval`, `--metrics-addr`,
 * `--enable-leader-election`, `-v/--verbose`, `WATCH_NAMESPACE`); everything else is an addition.
 */
import { Command, InvalidArgumentError, Option } from "commander";
import { parseGoDuration } from "./duration.ts";

export interface Config {
  reconcileIntervalMs: number;
  /** How long a namespace found in sync is skipped by passes; 0: compare every namespace in every pass. */
  fullCompareIntervalMs: number;
  metricsAddr: ListenAddr | undefined;
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
  /** Positional arguments, which are ignored (the Go espejo ignores them too). */
  ignoredArgs: string[];
}

export interface ListenAddr {
  hostname: string;
  port: number;
}

/** `:8080`, `127.0.0.1:8080`, `[::1]:8080`; `0` disables the server (as in controller-runtime). */
export function parseListenAddr(text: string): ListenAddr | undefined {
  if (text === "0") return undefined;
  const m = /^(\[[^\]]+\]|[^:]*):(\d{1,5})$/.exec(text);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) {
    throw new InvalidArgumentError(`"${text}" is not an address: use host:port, :port, or 0 to disable`);
  }
  const host = m[1].replace(/^\[|\]$/g, "");
  // No host: every address, IPv6 and IPv4 (Go listens dual-stack on ":port"); see lib/http_server.ts.
  return { hostname: host || "::", port };
}

/** A Go duration in milliseconds; zero is refused unless `zeroAllowed`, negative always. */
function goDuration(text: string, zeroAllowed = false): number {
  try {
    const ms = parseGoDuration(text);
    if (ms < 0 || (ms === 0 && !zeroAllowed)) {
      throw new Error(`"${text}" must ${zeroAllowed ? "not be negative" : "be positive"}`);
    }
    return ms;
  } catch (e) {
    throw new InvalidArgumentError((e as Error).message);
  }
}

const duration = (text: string) => goDuration(text);
const durationOrZero = (text: string) => goDuration(text, true);

function positiveNumber(text: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError(`"${text}" is not a positive number`);
  return n;
}

export function buildCommand(version: string): Command {
  return new Command("espejo")
    .description(
      "Copies objects into many namespaces as SyncConfig resources (sync.appuio.ch/v1alpha1) describe.\n" +
        "Environment: WATCH_NAMESPACE limits which SyncConfigs are read to one namespace (empty: all);\n" +
        "KUBECONFIG is used when --kubeconfig is not given (then the in-cluster service account, then ~/.kube/config).\n" +
        "Subcommand: `espejo plan` shows what espejo would change, and changes nothing (`espejo plan --help`).",
    )
    .version(version, "--version", "print the version and exit")
    .helpOption("-h, --help", "show this help and exit")
    .addOption(
      new Option(
        "--reconcile-interval <duration>",
        "how often every SyncConfig is synced against every namespace (Go duration: 10s, 1m30s); 0 turns the " +
          "passes off (events only, as in the Go espejo)",
      )
        .default(10_000, "10s").argParser(durationOrZero),
    )
    .addOption(
      new Option(
        "--full-compare-interval <duration>",
        "how long a pass skips a namespace whose last sync changed nothing and whose inputs did not change since; " +
          "0 compares every namespace in every pass",
      )
        .default(600_000, "10m").argParser(durationOrZero),
    )
    .addOption(
      new Option("--metrics-addr <addr>", "address of the Prometheus /metrics endpoint; 0 disables it")
        .default(":8080").argParser((v) => v),
    )
    .addOption(
      new Option("--health-addr <addr>", "address of the /healthz and /readyz probes; 0 disables them")
        .default(":8081").argParser((v) => v),
    )
    .addOption(
      new Option(
        "--enable-leader-election",
        "run as one of several replicas: only the holder of the Lease bd39f6a0.appuio.ch writes",
      )
        .default(false),
    )
    .addOption(
      new Option(
        "--leader-election-namespace <namespace>",
        "namespace of the leader Lease (default: the pod's namespace)",
      ),
    )
    .addOption(
      new Option("--lease-duration <duration>", "how long a Lease is valid without renewal").default(15_000, "15s")
        .argParser(duration),
    )
    .addOption(
      new Option("--renew-deadline <duration>", "how long the leader retries renewing before it gives up").default(
        10_000,
        "10s",
      ).argParser(duration),
    )
    .addOption(
      new Option("--retry-period <duration>", "how often leader election is attempted or renewed").default(2_000, "2s")
        .argParser(duration),
    )
    .addOption(new Option("-v, --verbose", "log at debug level").default(false))
    .addOption(new Option("--kubeconfig <path>", "kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)"))
    .addOption(new Option("--log-format <format>", "log format").choices(["text", "json"]).default("text"))
    .addOption(
      new Option("--kube-api-qps <qps>", "requests per second to the API server, sustained (watches excluded)")
        .default(50).argParser(positiveNumber),
    )
    .addOption(
      new Option("--kube-api-burst <requests>", "requests to the API server allowed in a burst above --kube-api-qps")
        .default(100).argParser((v) => {
          const n = positiveNumber(v);
          if (n < 1) throw new InvalidArgumentError(`"${v}" is less than 1: no request could ever be sent`);
          return n;
        }),
    )
    .addOption(
      new Option(
        "--concurrent-syncs <n>",
        "namespaces synced at the same time (never the same namespace twice); more converge a new SyncConfig faster",
      )
        .default(4).argParser((v) => {
          const n = Number(v);
          if (!Number.isInteger(n) || n < 1) {
            throw new InvalidArgumentError(`"${v}" is not a whole number of at least 1`);
          }
          return n;
        }),
    )
    .addOption(
      new Option(
        "--prune-default",
        'prune for every SyncConfig without a sync.appuio.ch/prune annotation (one with "false" never prunes): ' +
          "delete the objects espejo created for it when an item is removed, a namespace is no longer selected, " +
          "or the SyncConfig is deleted",
      ).default(false),
    )
    // pflag leaves positional arguments to the program, and the Go espejo ignores them: so do we (with a warning).
    .argument("[ignored...]")
    .allowExcessArguments(true);
}

const TRUE_SPELLINGS = new Set(["1", "t", "T", "TRUE", "true", "True"]);
const FALSE_SPELLINGS = new Set(["0", "f", "F", "FALSE", "false", "False"]);

/**
 * pflag accepts `--flag=<bool>` for booleans in every strconv.ParseBool spelling, and the last occurrence wins;
 * commander knows only the bare flag. So boolean flags are resolved here and passed on bare, once, when true.
 */
export function normalizeBooleanFlags(args: string[]): string[] {
  const aliases: Record<string, string> = {
    "--enable-leader-election": "--enable-leader-election",
    "--verbose": "--verbose",
    "-v": "--verbose",
    "--prune-default": "--prune-default",
  };
  const final = new Map<string, boolean>();
  const out: string[] = [];
  for (const a of args) {
    const m = /^(--?[\w-]+)(?:=(.*))?$/.exec(a);
    const flag = m ? aliases[m[1]] : undefined;
    if (!flag) {
      out.push(a);
      continue;
    }
    const value = m![2];
    if (value === undefined || TRUE_SPELLINGS.has(value)) final.set(flag, true);
    else if (FALSE_SPELLINGS.has(value)) final.set(flag, false);
    else out.push(a); // not a boolean spelling: let commander report it
  }
  for (const [flag, on] of final) if (on) out.push(flag);
  return out;
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * Why `name` cannot name a namespace (a DNS-1123 label, as kube-apiserver requires), or undefined when it can.
 * A watch of SyncConfigs in such a namespace would fail forever, so the controller would never become ready.
 */
export function namespaceNameProblem(name: string): string | undefined {
  if (name.length > 63) return `it has ${name.length} characters, at most 63 are allowed`;
  if (!DNS1123_LABEL.test(name)) {
    return "it must consist of lowercase letters, digits and '-', and start and end with a letter or digit";
  }
  return undefined;
}

/**
 * Parses flags and environment. On a bad value (a flag, or a `WATCH_NAMESPACE` that is not a namespace name)
 * commander prints a one-line reason and exits with code 1; tests pass `exitOverride` to get an exception instead.
 */
export function parseConfig(
  args: string[],
  env: Record<string, string | undefined>,
  version = "dev",
  exitOverride = false,
): Config {
  const cmd = buildCommand(version);
  if (exitOverride) cmd.exitOverride().configureOutput({ writeErr: () => {}, writeOut: () => {} });
  cmd.parse(normalizeBooleanFlags(args), { from: "user" });
  const o = cmd.opts();
  const addr = (flag: string, v: string) => {
    try {
      return parseListenAddr(v);
    } catch (e) {
      cmd.error(`error: option '${flag}' argument ${(e as Error).message}`);
    }
  };
  const watchNamespace = (env.WATCH_NAMESPACE ?? "").trim();
  const namespaceProblem = watchNamespace ? namespaceNameProblem(watchNamespace) : undefined;
  if (namespaceProblem) {
    cmd.error(
      `error: environment variable WATCH_NAMESPACE ${JSON.stringify(watchNamespace)} is not a namespace name: ` +
        `${namespaceProblem} (leave it empty to read SyncConfigs from all namespaces)`,
    );
  }
  return {
    reconcileIntervalMs: o.reconcileInterval,
    fullCompareIntervalMs: o.fullCompareInterval,
    metricsAddr: addr("--metrics-addr <addr>", o.metricsAddr),
    healthAddr: addr("--health-addr <addr>", o.healthAddr),
    enableLeaderElection: o.enableLeaderElection === true,
    leaderElectionNamespace: o.leaderElectionNamespace,
    leaseDurationMs: o.leaseDuration,
    renewDeadlineMs: o.renewDeadline,
    retryPeriodMs: o.retryPeriod,
    verbose: o.verbose === true,
    kubeconfig: o.kubeconfig,
    logFormat: o.logFormat,
    kubeApiQps: o.kubeApiQps,
    kubeApiBurst: o.kubeApiBurst,
    concurrentSyncs: o.concurrentSyncs,
    watchNamespace,
    pruneDefault: o.pruneDefault === true,
    ignoredArgs: cmd.args,
  };
}
