import assert from "node:assert/strict";
import fc from "fast-check";
import {
  type Config,
  FlagError,
  namespaceNameProblem,
  parseConfig,
  parseListenAddr,
  readCommandLine,
} from "../../lib/app/config.ts";

const parse = (args: string[], env: Record<string, string | undefined> = {}): Config => parseConfig(args, env);

Deno.test("parseConfig defaults match the Go espejo and controller-runtime", () => {
  assert.deepEqual(parse([]), {
    reconcileIntervalMs: 10_000, // espejo --reconcile-interval 10s
    fullCompareIntervalMs: 600_000,
    metricsAddr: { hostname: "::", port: 8080 }, // espejo --metrics-addr :8080, dual-stack as in Go
    metricsSecure: false, // plain HTTP as the Go espejo serves it; controller-runtime's scaffold turns it on
    metricsCertPath: undefined,
    healthAddr: { hostname: "::", port: 8081 }, // controller-runtime's usual probe address
    enableLeaderElection: false,
    leaderElectionNamespace: undefined,
    leaseDurationMs: 15_000, // controller-runtime LeaseDuration
    renewDeadlineMs: 10_000, // controller-runtime RenewDeadline
    retryPeriodMs: 2_000, // controller-runtime RetryPeriod
    verbose: false,
    kubeconfig: undefined,
    logFormat: "text",
    kubeApiQps: 50,
    kubeApiBurst: 100,
    concurrentSyncs: 4,
    watchNamespace: "",
    pruneDefault: false, // the Go espejo never deletes what it created
    trustedNamespaces: undefined, // delegated mode is an addition: off, as the Go espejo has none
  });
});

Deno.test("parseConfig reads --trusted-namespaces, else TRUSTED_NAMESPACES, as a checked comma-separated list", () => {
  const parse = (args: string[], env: Record<string, string> = {}) => parseConfig(args, env).trustedNamespaces;
  assert.deepEqual(parse(["--trusted-namespaces", "espejo-system, platform,,espejo-system"]), [
    "espejo-system",
    "platform",
  ]);
  assert.deepEqual(parse([], { TRUSTED_NAMESPACES: "espejo-system" }), ["espejo-system"]);
  assert.deepEqual(parse(["--trusted-namespaces=platform"], { TRUSTED_NAMESPACES: "espejo-system" }), ["platform"]);
  assert.equal(parse(["--trusted-namespaces="], { TRUSTED_NAMESPACES: "espejo-system" }), undefined);
  assert.equal(parse([], { TRUSTED_NAMESPACES: " " }), undefined);
  assert.throws(
    () => parse(["--trusted-namespaces", "espejo-system,Team_A"]),
    /--trusted-namespaces "espejo-system,Team_A": "Team_A" is not a namespace name: it must consist of lowercase/,
  );
  assert.throws(
    () => parse([], { TRUSTED_NAMESPACES: "a/b" }),
    /environment variable TRUSTED_NAMESPACES "a\/b": "a\/b" is not a namespace name/,
  );
});

Deno.test("parseConfig: --metrics-secure and --metrics-cert-path", () => {
  assert.deepEqual(
    [parse(["--metrics-secure"]).metricsSecure, parse(["--metrics-cert-path", "/certs"]).metricsCertPath],
    [true, "/certs"],
  );
});

Deno.test("parseConfig: --prune-default takes pflag's boolean spellings", () => {
  assert.equal(parse(["--prune-default"]).pruneDefault, true);
  assert.equal(parse(["--prune-default=false"]).pruneDefault, false);
  assert.equal(parse(["--prune-default=true", "--prune-default=0"]).pruneDefault, false);
});

Deno.test("parseConfig accepts the arguments of the Go espejo's deployment", () => {
  const c = parse([
    "--verbose=false",
    "--reconcile-interval=10m",
    "--metrics-addr=:8080",
    "--enable-leader-election=true",
  ]);
  assert.equal(c.verbose, false);
  assert.equal(c.reconcileIntervalMs, 600_000);
  assert.deepEqual(c.metricsAddr, { hostname: "::", port: 8080 });
  assert.equal(c.enableLeaderElection, true);
});

Deno.test("parseConfig: --concurrent-syncs is a whole number of at least 1", () => {
  assert.equal(parse(["--concurrent-syncs=8"]).concurrentSyncs, 8);
  for (const bad of ["0", "1.5", "-2", "many"]) {
    assert.throws(() => parse([`--concurrent-syncs=${bad}`]), /is not a whole number of at least 1/);
  }
});

Deno.test("parseConfig: --full-compare-interval takes a Go duration, 0 included, but nothing negative", () => {
  assert.equal(parse(["--full-compare-interval=1h"]).fullCompareIntervalMs, 3_600_000);
  assert.equal(parse(["--full-compare-interval", "0"]).fullCompareIntervalMs, 0);
  assert.throws(() => parse(["--full-compare-interval=-1s"]), /must not be negative/);
  assert.throws(() => parse(["--full-compare-interval=soon"]), FlagError);
});

const BOOLEANS: [args: string[], leader: boolean, verbose: boolean][] = [
  [[], false, false],
  [["--enable-leader-election"], true, false],
  [["--enable-leader-election=true"], true, false],
  [["--enable-leader-election=false"], false, false],
  [["-v"], false, true],
  [["--verbose"], false, true],
  [["--verbose=true"], false, true],
  [["-v=true"], false, true],
  [["--verbose=false"], false, false],
  [["-v", "--enable-leader-election"], true, true],
];

for (const [args, leader, verbose] of BOOLEANS) {
  Deno.test(`parseConfig reads ${JSON.stringify(args)} as leader election ${leader}, verbose ${verbose}`, () => {
    const c = parse(args);
    assert.equal(c.enableLeaderElection, leader);
    assert.equal(c.verbose, verbose);
  });
}

Deno.test({
  name: "parseConfig accepts every boolean spelling pflag accepts",
  fn() {
    for (const v of ["1", "t", "T", "TRUE", "True"]) {
      assert.equal(parse([`--enable-leader-election=${v}`]).enableLeaderElection, true);
    }
    for (const v of ["0", "f", "F", "FALSE", "False"]) {
      assert.equal(parse([`--enable-leader-election=${v}`]).enableLeaderElection, false);
    }
  },
});

Deno.test({
  name: "parseConfig lets a later --flag=false override an earlier boolean flag like pflag",
  fn() {
    assert.equal(parse(["--enable-leader-election", "--enable-leader-election=false"]).enableLeaderElection, false);
    assert.equal(parse(["-v", "--verbose=false"]).verbose, false);
  },
});

const VALUES: [args: string[], check: (c: Config) => void][] = [
  [["--reconcile-interval", "1m30s"], (c) => assert.equal(c.reconcileIntervalMs, 90_000)],
  [["--reconcile-interval=500ms"], (c) => assert.equal(c.reconcileIntervalMs, 500)],
  // pflag takes a zero duration; the Go espejo then never requeues: no interval passes.
  [["--reconcile-interval", "0"], (c) => assert.equal(c.reconcileIntervalMs, 0)],
  [["--reconcile-interval=0s"], (c) => assert.equal(c.reconcileIntervalMs, 0)],
  [["--metrics-addr=127.0.0.1:9090"], (c) => assert.deepEqual(c.metricsAddr, { hostname: "127.0.0.1", port: 9090 })],
  [["--metrics-addr", "[::1]:9090"], (c) => assert.deepEqual(c.metricsAddr, { hostname: "::1", port: 9090 })],
  [["--metrics-addr=0"], (c) => assert.equal(c.metricsAddr, undefined)],
  [["--health-addr=0"], (c) => assert.equal(c.healthAddr, undefined)],
  [["--leader-election-namespace=espejo"], (c) => assert.equal(c.leaderElectionNamespace, "espejo")],
  [["--lease-duration=30s", "--renew-deadline=20s", "--retry-period=5s"], (c) => {
    assert.equal(c.leaseDurationMs, 30_000);
    assert.equal(c.renewDeadlineMs, 20_000);
    assert.equal(c.retryPeriodMs, 5_000);
  }],
  [["--kubeconfig", "/tmp/kc"], (c) => assert.equal(c.kubeconfig, "/tmp/kc")],
  [["--log-format=json"], (c) => assert.equal(c.logFormat, "json")],
  [["--kube-api-qps=7.5", "--kube-api-burst=20"], (c) => {
    assert.equal(c.kubeApiQps, 7.5);
    assert.equal(c.kubeApiBurst, 20);
  }],
];

for (const [args, check] of VALUES) {
  Deno.test(`parseConfig reads ${JSON.stringify(args)}`, () => check(parse(args)));
}

const ENV: [env: Record<string, string | undefined>, want: string][] = [
  [{}, ""],
  [{ WATCH_NAMESPACE: "" }, ""],
  [{ WATCH_NAMESPACE: "espejo" }, "espejo"],
  [{ WATCH_NAMESPACE: " espejo\n" }, "espejo"],
  [{ WATCH_NAMESPACE: undefined }, ""],
];

for (const [env, want] of ENV) {
  Deno.test(`parseConfig reads WATCH_NAMESPACE from ${JSON.stringify(env)} as ${JSON.stringify(want)}`, () => {
    assert.equal(parse([], env).watchNamespace, want);
  });
}

Deno.test("parseConfig reads WATCH_NAMESPACE from the env it is given, not from Deno.env", () => {
  const before = Deno.env.get("WATCH_NAMESPACE");
  Deno.env.set("WATCH_NAMESPACE", "from-process");
  try {
    assert.equal(parse([], {}).watchNamespace, "");
    assert.equal(parse([], { WATCH_NAMESPACE: "given" }).watchNamespace, "given");
  } finally {
    if (before === undefined) Deno.env.delete("WATCH_NAMESPACE");
    else Deno.env.set("WATCH_NAMESPACE", before);
  }
});

const BAD_NAMESPACES: [value: string, reason: RegExp][] = [
  ["Espejo", /lowercase letters, digits and '-'/],
  ["espejo_system", /lowercase letters, digits and '-'/],
  ["espejo.system", /lowercase letters, digits and '-'/],
  ["-espejo", /start and end with a letter or digit/],
  ["espejo-", /start and end with a letter or digit/],
  ["espejo system", /lowercase letters/],
  ["a".repeat(64), /has 64 characters, at most 63/],
];

for (const [value, reason] of BAD_NAMESPACES) {
  Deno.test(`parseConfig rejects WATCH_NAMESPACE ${JSON.stringify(value)} naming the variable and the reason`, () => {
    assert.throws(() => parse([], { WATCH_NAMESPACE: value }), (e: unknown) => {
      assert.ok(e instanceof FlagError, `expected a FlagError, got ${e}`);
      assert.equal(e.exitCode, 1);
      assert.match(e.message, /WATCH_NAMESPACE/);
      assert.ok(e.message.includes(JSON.stringify(value)), e.message);
      assert.match(e.message, reason);
      assert.ok(!e.message.includes("\n"), "one line");
      return true;
    });
  });
}

Deno.test("parseConfig accepts every WATCH_NAMESPACE that is a DNS-1123 label", () => {
  for (const value of ["a", "0", "espejo-system", "team-42", "a".repeat(63), "1-a"]) {
    assert.equal(parse([], { WATCH_NAMESPACE: value }).watchNamespace, value);
  }
});

Deno.test("namespaceNameProblem agrees with the DNS-1123 label rule", () => {
  const label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
  fc.assert(fc.property(fc.stringMatching(/^[-a-z0-9A-Z_.]{1,70}$/), (name) => {
    const valid = name.length <= 63 && label.test(name);
    assert.equal(namespaceNameProblem(name) === undefined, valid, name);
  }));
});

const BAD: [args: string[], part: string][] = [
  [["--reconcile-interval=abc"], "--reconcile-interval"],
  [["--reconcile-interval=10"], "--reconcile-interval"], // Go needs a unit
  [["--reconcile-interval=1d"], "--reconcile-interval"],
  [["--reconcile-interval=-1s"], "must not be negative"],
  [["--lease-duration=soon"], "--lease-duration"],
  [["--metrics-addr=foo"], "--metrics-addr"],
  [["--metrics-addr=localhost"], "--metrics-addr"],
  [["--metrics-addr=:99999"], "--metrics-addr"],
  [["--metrics-addr=:65536"], "--metrics-addr"],
  [["--health-addr=8081"], "--health-addr"],
  [["--nope"], "unknown flag: --nope"],
  [["-x"], "unknown shorthand flag: 'x' in -x"],
  [["-vx"], "unknown shorthand flag: 'x' in -vx"],
  [["---verbose"], "bad flag syntax: ---verbose"],
  [["--reconcile-interval="], 'invalid argument "" for "--reconcile-interval" flag'], // empty, as pflag reads it
  [["--enable-leader-election=yes"], 'invalid argument "yes" for "--enable-leader-election" flag'],
  [["--log-format=xml"], "--log-format"],
  [["--kube-api-qps=0"], "--kube-api-qps"],
  [["--kube-api-burst=many"], "--kube-api-burst"],
  [["--reconcile-interval"], "flag needs an argument: --reconcile-interval"], // missing value
];

for (const [args, part] of BAD) {
  Deno.test(`parseConfig rejects ${JSON.stringify(args)} with a message naming ${part}`, () => {
    assert.throws(() => parse(args), (e: unknown) => {
      assert.ok(e instanceof FlagError, `expected a FlagError, got ${e}`);
      assert.ok(e.message.includes(part), e.message);
      assert.equal(e.exitCode, 1);
      return true;
    });
  });
}

const ADDRS: [text: string, want: ReturnType<typeof parseListenAddr>][] = [
  [":8080", { hostname: "::", port: 8080 }],
  ["127.0.0.1:8080", { hostname: "127.0.0.1", port: 8080 }],
  ["[::1]:8080", { hostname: "::1", port: 8080 }],
  ["[::]:9090", { hostname: "::", port: 9090 }],
  ["localhost:1", { hostname: "localhost", port: 1 }],
  [":65535", { hostname: "::", port: 65535 }],
  ["0", undefined],
];

for (const [text, want] of ADDRS) {
  Deno.test(`parseListenAddr reads ${JSON.stringify(text)}`, () => {
    assert.deepEqual(parseListenAddr(text), want);
  });
}

for (const text of ["", "8080", ":", ":abc", "host:", ":65536", ":123456", "::1:8080", "a:b:1"]) {
  Deno.test(`parseListenAddr rejects ${JSON.stringify(text)} quoting it`, () => {
    assert.throws(() => parseListenAddr(text), (e: unknown) => {
      assert.ok(e instanceof Error && e.message.includes(JSON.stringify(text)), String(e));
      return true;
    });
  });
}

const PFLAG: [args: string[], check: (c: Config) => void][] = [
  // The last occurrence wins, booleans included.
  [["--verbose=true", "-v=false"], (c) => assert.equal(c.verbose, false)],
  [["--reconcile-interval=1m", "--reconcile-interval=2m"], (c) => assert.equal(c.reconcileIntervalMs, 120_000)],
  // A flag that takes a value takes the next word, even one that starts with a dash.
  [["--kubeconfig", "--verbose=true"], (c) => assert.deepEqual([c.kubeconfig, c.verbose], ["--verbose=true", false])],
  // Shorthands group: -vv is verbose twice.
  [["-vv"], (c) => assert.equal(c.verbose, true)],
];

for (const [args, check] of PFLAG) {
  Deno.test(`parseConfig reads ${JSON.stringify(args)} as pflag does`, () => check(parse(args)));
}

Deno.test("readCommandLine: --help and --version print instead of running", () => {
  const help = readCommandLine(["--reconcile-interval=1m", "-h"], {}, "1.2.3");
  assert.ok("print" in help && help.print.includes("--reconcile-interval <duration>"), JSON.stringify(help));
  assert.ok("print" in help && help.print.includes("(default: 10s)"));
  assert.deepEqual(readCommandLine(["--version"], {}, "1.2.3"), { print: "1.2.3" });
  assert.ok("print" in readCommandLine(["-vh"], {}), "-vh: verbose, then help");
});

const STRAY: [args: string[], message: RegExp][] = [
  // A mistyped subcommand must not start a controller (it would write without the Lease): refused, with a hint.
  [["plna"], /^unknown command "plna" for "espejo"\n\nDid you mean this\?\n\tplan\nRun 'espejo --help' for usage\.$/],
  [["pla"], /Did you mean this\?\n\tplan/],
  [["extra", "--verbose"], /^unknown command "extra" for "espejo"\nRun 'espejo --help' for usage\.$/],
  // `--` ends the flags: what follows is a positional argument, refused like any other.
  [["--", "--verbose"], /^unknown command "--verbose" for "espejo"/],
  [["-"], /^unknown command "-" for "espejo"/],
  // cobra finds the command before it reads flags: a mistyped subcommand is named, whatever flags follow it.
  [["plna", "-f", "a.yaml"], /^unknown command "plna" for "espejo"\n\nDid you mean this\?\n\tplan\n/],
  [["--kubeconfig", "x", "plna", "--nope"], /^unknown command "plna" for "espejo"/],
  [["--reconcile-interval=1m", "plna"], /^unknown command "plna" for "espejo"/],
];

Deno.test("readCommandLine: an unknown flag takes the next word, as cobra assumes when it looks for a command", () => {
  assert.throws(() => readCommandLine(["--nope", "plna"], {}), /^Error: unknown flag: --nope$/);
  assert.throws(() => readCommandLine(["-x", "plna"], {}), /unknown shorthand flag: 'x' in -x/);
});

Deno.test("readCommandLine is never handed a subcommand: main.ts runs it (an Error, not a FlagError)", () => {
  assert.throws(() => readCommandLine(["-v", "plan"], {}), (e: unknown) => !(e instanceof FlagError));
});

for (const [args, message] of STRAY) {
  Deno.test(`readCommandLine refuses the stray argument in ${JSON.stringify(args)} with exit code 1`, () => {
    assert.throws(() => readCommandLine(args, {}), (e: unknown) => {
      assert.ok(e instanceof FlagError, `expected a FlagError, got ${e}`);
      assert.equal(e.exitCode, 1);
      assert.match(e.message, message);
      return true;
    });
  });
}

// A Deployment written for the Go espejo, whose pflag left a word after a boolean flag positional and ignored it.
const GO_ESPEJO_LINES: [args: string[], leader: boolean, verbose: boolean, warning: RegExp][] = [
  [
    ["--enable-leader-election", "true"],
    true,
    false,
    /^ignoring positional argument "true" after --enable-leader-election; write --enable-leader-election=true$/,
  ],
  // The Go espejo ran these with the flag on; so does espejo, saying so.
  [["--enable-leader-election", "false"], true, false, /--enable-leader-election is on, as the Go espejo read/],
  [["--verbose", "False", "--reconcile-interval=1m"], false, true, /"False" after --verbose: .*--verbose is on/],
  [["-v", "1", "--enable-leader-election", "t"], true, true, /"1" after -v; write --verbose=1/],
];

for (const [args, leader, verbose, warning] of GO_ESPEJO_LINES) {
  Deno.test(`readCommandLine runs ${JSON.stringify(args)} as the Go espejo did, with a warning`, () => {
    const line = readCommandLine(args, {});
    assert.ok("run" in line, JSON.stringify(line));
    assert.deepEqual([line.run.enableLeaderElection, line.run.verbose], [leader, verbose]);
    assert.match(line.warnings[0], warning);
  });
}

Deno.test("readCommandLine warns of nothing on a command line pflag reads without positional arguments", () => {
  const line = readCommandLine(["--enable-leader-election=false", "-v", "--metrics-addr", "0"], {});
  assert.deepEqual("run" in line && line.warnings, []);
});

const STRAY_AFTER_BOOLEAN: [args: string[], message: RegExp][] = [
  // espejo's own booleans: no Go espejo line carries them, and "false" would turn on what it asks off.
  [["--prune-default", "false"], /^"false" after --prune-default is not its value/],
  [["--metrics-secure", "0"], /^"0" after --metrics-secure is not its value/],
  // A word pflag never takes as a boolean's value, or one after a flag that has its value already.
  [["--enable-leader-election", "yes"], /^unknown command "yes" for "espejo"\n--enable-leader-election is a boolean/],
  [["-v", "plna"], /^unknown command "plna" for "espejo"\n\nDid you mean this\?\n\tplan\nRun 'espejo --help'/],
  [["--enable-leader-election=true", "true"], /^unknown command "true" for "espejo"\nRun/],
  [["--enable-leader-election", "true", "true"], /^unknown command "true" for "espejo"\nRun/],
];

for (const [args, message] of STRAY_AFTER_BOOLEAN) {
  Deno.test(`readCommandLine refuses ${JSON.stringify(args)} with exit code 1`, () => {
    assert.throws(() => readCommandLine(args, {}), (e: unknown) => {
      assert.ok(e instanceof FlagError, `expected a FlagError, got ${e}`);
      assert.equal(e.exitCode, 1);
      assert.match(e.message, message);
      return true;
    });
  });
}
