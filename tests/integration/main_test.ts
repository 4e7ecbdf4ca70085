/** The controller as a process: flags, probes, metrics, and a clean exit on SIGTERM. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { repoRoot } from "../../testenv/build.ts";
import { freePorts, type Identity, kubeconfigYaml } from "../../testenv/controlplane.ts";
import { makeCerts } from "../../testenv/certs.ts";
import { clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";
import { createNamespace, createSyncConfig, getObject } from "../../testenv/harness.ts";
import { espejoPermissions, espejoV8Flags, shippedFlags } from "../../testenv/permissions.ts";
import { imageEnvironment } from "../../testenv/image_env.ts";
import { espejoIdentity } from "../../testenv/espejo_rbac.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const mainTs = join(repoRoot, "main.ts");

async function runMain(args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...shippedFlags(), mainTs, ...args],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, stdout: new TextDecoder().decode(out.stdout), stderr: new TextDecoder().decode(out.stderr) };
}

/** main.ts started as the image runs it, and its output, collected until it exits. */
function startMain(args: string[], env: Record<string, string>) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...shippedFlags(), mainTs, ...args],
    env: { ...imageEnvironment(), ...env },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output = Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
  return { child, output };
}

/** The messages of the warnings among JSON log lines (warnings go to stderr by console.warn, the rest to stdout). */
function warningsOf([stdout, stderr]: string[]): string[] {
  const lines = `${stdout}\n${stderr}`.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
  return lines.filter((l) => l.level === "warning").map((l) => l.message);
}

Deno.test("main --help lists every flag, and docs/reference.md documents each of them", opts, async () => {
  const { code, stdout } = await runMain(["--help"]);
  assert.equal(code, 0);
  const flags = [...stdout.matchAll(/(?:^|\s)(--[a-z][a-z-]+)/g)].map((m) => m[1]);
  for (const f of ["--reconcile-interval", "--metrics-addr", "--enable-leader-election", "--verbose", "--kubeconfig"]) {
    assert.ok(flags.includes(f), `--help lists ${f}`);
  }
  const reference = await Deno.readTextFile(join(repoRoot, "docs", "reference.md"));
  for (const f of new Set(flags)) assert.ok(reference.includes(f), `docs/reference.md documents ${f}`);
  assert.match(stdout, /WATCH_NAMESPACE/);
});

Deno.test("main exits 1 with a one-line reason on a bad flag value, as the Go espejo does", opts, async () => {
  for (
    const [args, reason] of [
      [["--reconcile-interval", "ten"], /reconcile-interval.*invalid duration "ten"/],
      [["--metrics-addr", "nonsense"], /metrics-addr.*not an address/],
      [["--log-format", "xml"], /log-format.*xml/],
      [["--no-such-flag"], /unknown flag: --no-such-flag/], // pflag's words
    ] as const
  ) {
    const { code, stderr } = await runMain([...args]);
    assert.equal(code, 1, `${args.join(" ")} exits 1`);
    assert.match(stderr.split("\n")[0], reason);
    assert.equal(stderr.trim().split("\n").length, 1, `one line: ${stderr}`);
  }
});

Deno.test("main refuses a mistyped subcommand with exit 1 before it starts anything", opts, async () => {
  // A kubeconfig that points nowhere: if the controller started, it would log its start and try to connect.
  const { code, stdout, stderr } = await runMain(["plna"], { KUBECONFIG: "/nonexistent" });
  assert.equal(code, 1, stderr);
  assert.match(stderr, /^error: unknown command "plna" for "espejo"\n\nDid you mean this\?\n\tplan\n/);
  assert.doesNotMatch(stdout + stderr, /Starting espejo/);
});

Deno.test("main refuses a mistyped subcommand after flags too, with its suggestion", opts, async () => {
  for (const args of [["--kubeconfig", "/nonexistent", "plna"], ["-v", "plna", "-f", "a.yaml"]]) {
    const { code, stdout, stderr } = await runMain(args, { KUBECONFIG: "/nonexistent" });
    assert.equal(code, 1, `${args.join(" ")}: ${stderr}`);
    assert.match(stderr, /^error: unknown command "plna" for "espejo"\n\nDid you mean this\?\n\tplan\n/);
    assert.doesNotMatch(stdout + stderr, /Starting espejo/);
  }
});

Deno.test("main runs plan with the flags before it: espejo --kubeconfig <path> plan -f <file>", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("main-plan");
  const target = uniqueName("main-plan-target");
  const dir = await Deno.makeTempDir();
  try {
    await createNamespace(admin, cfgNs);
    await createNamespace(admin, target);
    const kubeconfig = join(dir, "kubeconfig");
    await Deno.writeTextFile(kubeconfig, kubeconfigYaml(c.server, c.caPem, c.admin));
    const file = join(dir, "syncconfig.json");
    await Deno.writeTextFile(
      file,
      JSON.stringify({
        apiVersion: "sync.appuio.ch/v1alpha1",
        kind: "SyncConfig",
        metadata: { name: "from-file", namespace: cfgNs },
        spec: {
          namespaceSelector: { matchNames: [target] },
          syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "planned" }, data: { a: "b" } }],
        },
      }),
    );
    // Both spellings of the flag before the subcommand, and one more flag of plan's on either side.
    for (
      const args of [
        ["--kubeconfig", kubeconfig, "plan", "-f", file, "-o", "json"],
        [`--kubeconfig=${kubeconfig}`, "-o", "json", "plan", "-f", file],
      ]
    ) {
      const { code, stdout, stderr } = await runMain(args, { WATCH_NAMESPACE: cfgNs });
      assert.equal(code, 2, `${args.join(" ")}: something would change; ${stderr}`);
      const report = JSON.parse(stdout) as {
        syncConfigs: { syncConfig: string; actions: { action: string; namespace: string; name: string }[] }[];
      };
      const actions = report.syncConfigs.find((s) => s.syncConfig === `${cfgNs}/from-file`)?.actions;
      assert.deepEqual(actions?.map((a) => [a.action, a.namespace, a.name]), [["create", target, "planned"]]);
    }
  } finally {
    admin.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test(
  "main runs --enable-leader-election true as the Go espejo did: leader election on, a warning that names the word",
  opts,
  async () => {
    const c = await testCluster();
    const admin = clientFor(c);
    const cfgNs = uniqueName("main-bool");
    const dir = await Deno.makeTempDir();
    try {
      const identity = await espejoIdentity(admin, cfgNs, { leaderElection: true });
      const kubeconfig = join(dir, "kubeconfig");
      await Deno.writeTextFile(kubeconfig, kubeconfigYaml(c.server, c.caPem, identity));
      const [metricsPort, healthPort] = await freePorts(2);
      const { child, output } = startMain([
        ...["--kubeconfig", kubeconfig, "--log-format=json"],
        // As a Deployment written for the Go espejo may have it: pflag left "true" positional, and espejo ignored it.
        ...["--enable-leader-election", "true"],
        ...[`--metrics-addr=127.0.0.1:${metricsPort}`, `--health-addr=127.0.0.1:${healthPort}`],
      ], { WATCH_NAMESPACE: cfgNs });
      try {
        await eventually(
          async () => (await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => undefined))?.status === 200,
          30_000,
          "ready",
        );
        await eventually(
          async () => {
            const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).catch(() => undefined);
            return /^espejo_leader 1$/m.test((await res?.text()) ?? "");
          },
          30_000,
          "the leader, by its Lease",
        );
        const lease = await getObject(
          admin,
          `/apis/coordination.k8s.io/v1/namespaces/${cfgNs}/leases/bd39f6a0.appuio.ch`,
        ) as { spec?: { holderIdentity?: string } };
        assert.ok(lease.spec?.holderIdentity, "the Lease names its holder");
      } finally {
        child.kill("SIGTERM");
        assert.equal((await child.status).code, 0, "exits 0 on SIGTERM");
      }
      const warnings = warningsOf(await output);
      assert.ok(
        warnings.includes(
          'ignoring positional argument "true" after --enable-leader-election; write --enable-leader-election=true',
        ),
        `the warning names the word and the flag: ${JSON.stringify(warnings)}`,
      );
    } finally {
      admin.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
);

Deno.test("main names why it cannot reach the API server, in the log and in /readyz", opts, async () => {
  const c = await testCluster();
  const dir = await Deno.makeTempDir();
  try {
    // A CA the API server's certificate was not signed by (makeCerts returns the paths of PEM files).
    const otherCa = await Deno.readTextFile((await makeCerts(dir)).caCert);
    const [closedPort] = await freePorts(1);
    const identity = { username: "nobody", token: "unused" } as Identity;
    const cases = [
      {
        name: "wrong CA",
        kubeconfig: kubeconfigYaml(c.server, otherCa, identity),
        cause: /x509: certificate signed by unknown authority/,
      },
      {
        name: "nothing listening",
        kubeconfig: kubeconfigYaml(`https://127.0.0.1:${closedPort}`, c.caPem, identity),
        cause: new RegExp(`dial tcp 127\\.0\\.0\\.1:${closedPort}: connect: connection refused`),
      },
    ];
    for (const { name, kubeconfig, cause } of cases) {
      const path = join(dir, `kubeconfig-${cases.findIndex((x) => x.name === name)}`);
      await Deno.writeTextFile(path, kubeconfig);
      const [healthPort] = await freePorts(1);
      const child = new Deno.Command(Deno.execPath(), {
        args: [
          ...["run", ...shippedFlags(), mainTs, "--kubeconfig", path],
          ...[`--health-addr=127.0.0.1:${healthPort}`, "--metrics-addr=0"], // never the shared default :8080
        ],
        env: { ...imageEnvironment(), WATCH_NAMESPACE: "espejo" },
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const output = Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
      try {
        const body = await eventually(
          async () => {
            const res = await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => undefined);
            const text = await res?.text();
            return res?.status === 503 && text && cause.test(text) ? text : undefined;
          },
          30_000,
          `${name}: /readyz names the cause`,
        );
        assert.match(body, /^caches are not synced yet: namespaces: cannot reach the API server at https:\/\//);
      } finally {
        child.kill("SIGTERM");
        await child.status;
      }
      const [stdout, stderr] = await output;
      assert.match(stdout + stderr, cause, `${name}: the log names the cause`);
      assert.doesNotMatch(stdout + stderr, /fetch failed/, `${name}: not the bare "fetch failed"`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test(
  "main warns at its start that an empty WATCH_NAMESPACE lets any SyncConfig author control every namespace",
  opts,
  async () => {
    const dir = await Deno.makeTempDir();
    try {
      const [closedPort, healthPort] = await freePorts(2);
      const path = join(dir, "kubeconfig");
      const identity = { username: "nobody", token: "unused" } as Identity;
      await Deno.writeTextFile(path, kubeconfigYaml(`https://127.0.0.1:${closedPort}`, "", identity));
      const { child, output } = startMain([
        ...["--kubeconfig", path, "--log-format=json"],
        ...[`--health-addr=127.0.0.1:${healthPort}`, "--metrics-addr=0"],
      ], { WATCH_NAMESPACE: "" });
      try {
        // Serving probes means the start is behind it, and with it the warning.
        await eventually(
          async () => (await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => undefined))?.status === 503,
          30_000,
          "the probes served",
        );
      } finally {
        child.kill("SIGTERM");
        await child.status;
      }
      const warnings = warningsOf(await output);
      assert.ok(
        warnings.some((m) => /WATCH_NAMESPACE is empty: .*anyone who can create a SyncConfig in any namespace/.test(m)),
        `a warning names the risk: ${JSON.stringify(warnings)}`,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

Deno.test("main serves probes and metrics, syncs, and exits 0 soon after SIGTERM", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("main");
  const target = uniqueName("main-target");
  const dir = await Deno.makeTempDir();
  try {
    const identity = await espejoIdentity(admin, cfgNs);
    const kubeconfig = join(dir, "kubeconfig");
    await Deno.writeTextFile(kubeconfig, kubeconfigYaml(c.server, c.caPem, identity));
    const [metricsPort, healthPort] = await freePorts(2);
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        ...shippedFlags(),
        mainTs,
        "--kubeconfig",
        kubeconfig,
        `--metrics-addr=:${metricsPort}`, // every address, IPv6 and IPv4, as the Go espejo listens
        `--health-addr=127.0.0.1:${healthPort}`,
        "--reconcile-interval=1s",
        "--log-format=json",
      ],
      env: { ...imageEnvironment(), WATCH_NAMESPACE: cfgNs },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const output = Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
    try {
      await eventually(
        async () => (await fetch(`http://127.0.0.1:${healthPort}/readyz`)).status === 200,
        30_000,
        "ready",
      );
      assert.equal((await fetch(`http://127.0.0.1:${healthPort}/healthz`)).status, 200);
      await createNamespace(admin, target);
      await createSyncConfig(admin, cfgNs, "via-main", {
        namespaceSelector: { matchNames: [target] },
        syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "from-main" }, data: { a: "b" } }],
      });
      await eventually(() => getObject(admin, `/api/v1/namespaces/${target}/configmaps/from-main`), 20_000, "synced");
      const metrics = await eventually(async () => {
        const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
        return /espejo_object_writes_total\{action="create"\} 1/.test(text) ? text : undefined;
      });
      // `:port` is dual-stack: the same endpoint answers on IPv6 loopback (IPv6-only clusters probe that way).
      const v6 = await fetch(`http://[::1]:${metricsPort}/metrics`);
      assert.equal(v6.status, 200);
      assert.match(await v6.text(), /espejo_object_writes_total/);
      assert.match(metrics, /espejo_api_requests_total\{verb="POST",resource="configmaps",code="201"\} 1/);
      assert.match(metrics, /process_resident_memory_bytes/);
      assert.match(metrics, /espejo_syncs_total\{trigger="syncconfig",result="success"\} [1-9]/);
      // Every metric docs/reference.md documents is served.
      const reference = await Deno.readTextFile(join(repoRoot, "docs", "reference.md"));
      const documented = [
        ...reference.matchAll(/^\| `((?:espejo|controller_runtime|workqueue|rest_client|leader_election)_[a-z_]+)/gm),
      ].map((m) => m[1]);
      assert.ok(documented.length >= 18, "docs/reference.md lists the metrics, the Go espejo's names among them");
      for (const name of documented) assert.match(metrics, new RegExp(`^# TYPE ${name} `, "m"), `${name} is served`);
    } finally {
      const sentAt = Date.now();
      child.kill("SIGTERM");
      const status = await child.status;
      const [stdout] = await output;
      assert.equal(status.code, 0, `exit code after SIGTERM; output:\n${stdout.slice(-2000)}`);
      assert.ok(Date.now() - sentAt < 10_000, "exits within 10 s");
      // JSON lines: every line parses, and the create names namespace and SyncConfig.
      const lines = stdout.trim().split("\n").map((l) => JSON.parse(l));
      assert.ok(lines.some((l) => /Created ConfigMap/.test(l.message) && l.namespace === target));
    }
  } finally {
    admin.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("The shipped binary and the process tests use one permission set and one set of V8 flags", () => {
  const flags = espejoPermissions();
  assert.ok(flags.length > 0 && flags.every((f) => f.startsWith("--allow-")), flags.join(" "));
  assert.ok(!flags.includes("--allow-all") && !flags.includes("-A"), "least privilege, not everything");
  const v8 = espejoV8Flags();
  assert.ok(v8.length > 0 && v8.every((f) => f.startsWith("--v8-flags=")), v8.join(" "));
  assert.deepEqual(shippedFlags(), [...flags, ...v8]);
  const dockerfile = Deno.readTextFileSync(join(repoRoot, "Dockerfile"));
  assert.match(
    dockerfile,
    /deno compile \$\(cat deno\.permissions\) \$\(cat deno\.v8-flags\)/,
    "the Dockerfile compiles with both",
  );
  const tasks = JSON.parse(Deno.readTextFileSync(join(repoRoot, "deno.json"))).tasks as Record<string, string>;
  assert.equal(imageEnvironment().MALLOC_ARENA_MAX, "2", "the image's allocator settings are read from the Dockerfile");
  for (const task of ["compile", "dev"]) {
    assert.match(tasks[task], /\$\(cat deno\.permissions\) \$\(cat deno\.v8-flags\)/, `deno task ${task} uses both`);
  }
});
