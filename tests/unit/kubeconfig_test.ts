import assert from "node:assert/strict";
import { join } from "node:path";
import FakeTimers from "@sinonjs/fake-timers";
import { loadClientOptions } from "../../lib/kube/kubeconfig.ts";

const CA = "-----BEGIN CERTIFICATE-----\nMIIBca\n-----END CERTIFICATE-----\n";
const CERT = "-----BEGIN CERTIFICATE-----\nMIIBclient\n-----END CERTIFICATE-----\n";
const KEY = "-----BEGIN PRIVATE KEY-----\nMIIkey\n-----END PRIVATE KEY-----\n";

interface Doc {
  current?: string;
  clusters?: Record<string, Record<string, unknown>>;
  users?: Record<string, Record<string, unknown>>;
  contexts?: Record<string, { cluster: string; user?: string }>;
}

function kubeconfig(d: Doc): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    ...(d.current ? { "current-context": d.current } : {}),
    clusters: Object.entries(d.clusters ?? {}).map(([name, cluster]) => ({ name, cluster })),
    users: Object.entries(d.users ?? {}).map(([name, user]) => ({ name, user })),
    contexts: Object.entries(d.contexts ?? {}).map(([name, context]) => ({ name, context })),
  });
}

const simple = (server: string, user: Record<string, unknown> = { token: "t0k" }): Doc => ({
  current: "ctx",
  clusters: { c: { server, "certificate-authority-data": btoa(CA) } },
  users: { u: user },
  contexts: { ctx: { cluster: "c", user: "u" } },
});

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "espejo-kubeconfig-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function write(dir: string, name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await Deno.mkdir(join(path, ".."), { recursive: true });
  await Deno.writeTextFile(path, text);
  return path;
}

const nowhere = (dir: string, env: Record<string, string> = {}) => ({
  env: { HOME: join(dir, "no-home"), ...env },
  serviceAccountDir: join(dir, "no-sa"),
});

Deno.test("kubeconfig: server, inline CA and a bearer token", async () => {
  await withDir(async (dir) => {
    const path = await write(dir, "config", kubeconfig(simple("https://api.example:6443")));
    const o = await loadClientOptions(path, nowhere(dir));
    assert.equal(o.server, "https://api.example:6443");
    assert.deepEqual(o.caCerts, [CA]);
    assert.equal(await o.authorization?.(), "Bearer t0k");
    assert.equal(o.cert, undefined);
  });
});

Deno.test("kubeconfig: files are relative to the kubeconfig that names them; client certificate and key", async () => {
  await withDir(async (dir) => {
    await write(dir, "conf/pki/ca.crt", CA);
    await write(dir, "conf/pki/client.crt", CERT);
    await write(dir, "conf/pki/client.key", KEY);
    const path = await write(
      dir,
      "conf/config",
      kubeconfig({
        current: "ctx",
        clusters: { c: { server: "https://a:1", "certificate-authority": "pki/ca.crt" } },
        users: { u: { "client-certificate": "pki/client.crt", "client-key": "pki/client.key" } },
        contexts: { ctx: { cluster: "c", user: "u" } },
      }),
    );
    const o = await loadClientOptions(path, nowhere(dir));
    assert.deepEqual(o.caCerts, [CA]);
    assert.equal(o.cert, CERT);
    assert.equal(o.key, KEY);
    assert.equal(await o.authorization?.(), undefined);
  });
});

Deno.test("kubeconfig: basic auth", async () => {
  await withDir(async (dir) => {
    const path = await write(dir, "config", kubeconfig(simple("https://a:1", { username: "ad", password: "pw" })));
    const o = await loadClientOptions(path, nowhere(dir));
    assert.equal(await o.authorization?.(), `Basic ${btoa("ad:pw")}`);
  });
});

Deno.test("kubeconfig: a tokenFile is read again after a minute (rotated tokens)", async () => {
  await withDir(async (dir) => {
    const tokenPath = await write(dir, "token", "first\n");
    const path = await write(dir, "config", kubeconfig(simple("https://a:1", { tokenFile: "token" })));
    const clock = FakeTimers.install({ now: 1_000_000, toFake: ["Date"] });
    try {
      const o = await loadClientOptions(path, nowhere(dir));
      assert.equal(await o.authorization?.(), "Bearer first");
      await Deno.writeTextFile(tokenPath, "second\n");
      clock.tick(30_000);
      assert.equal(await o.authorization?.(), "Bearer first");
      clock.tick(31_000);
      assert.equal(await o.authorization?.(), "Bearer second");
    } finally {
      clock.uninstall();
    }
  });
});

Deno.test("kubeconfig: a tokenFile takes precedence over an inline token, as in client-go", async () => {
  await withDir(async (dir) => {
    await write(dir, "token", "from-file\n");
    const path = await write(dir, "config", kubeconfig(simple("https://a:1", { token: "inline", tokenFile: "token" })));
    const o = await loadClientOptions(path, nowhere(dir));
    assert.equal(await o.authorization?.(), "Bearer from-file");
  });
});

Deno.test("kubeconfig: a KUBECONFIG list merges; the first file to name an entry or a context wins", async () => {
  await withDir(async (dir) => {
    const first = await write(
      dir,
      "one",
      kubeconfig({
        current: "ctx",
        users: { u: { token: "from-one" } },
        contexts: { ctx: { cluster: "c", user: "u" } },
      }),
    );
    const second = await write(
      dir,
      "two",
      kubeconfig({
        current: "other",
        clusters: { c: { server: "https://from-two:1" } },
        users: { u: { token: "from-two" } },
        contexts: { other: { cluster: "c", user: "u" } },
      }),
    );
    const missing = join(dir, "missing");
    const o = await loadClientOptions(undefined, nowhere(dir, { KUBECONFIG: [missing, first, second].join(":") }));
    assert.equal(o.server, "https://from-two:1");
    assert.equal(await o.authorization?.(), "Bearer from-one");
  });
});

Deno.test("kubeconfig: in-cluster service account (IPv6 host in brackets)", async () => {
  await withDir(async (dir) => {
    const sa = join(dir, "sa");
    await write(sa, "token", "sa-token\n");
    await write(sa, "ca.crt", CA);
    const o = await loadClientOptions(undefined, {
      env: { KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "6443", HOME: join(dir, "no-home") },
      serviceAccountDir: sa,
    });
    assert.equal(o.server, "https://[fd00::1]:6443");
    assert.deepEqual(o.caCerts, [CA]);
    assert.equal(await o.authorization?.(), "Bearer sa-token");
  });
});

Deno.test("kubeconfig: the order is --kubeconfig, KUBECONFIG, in-cluster, ~/.kube/config", async () => {
  await withDir(async (dir) => {
    const flag = await write(dir, "flag", kubeconfig(simple("https://flag:1")));
    const env = await write(dir, "env", kubeconfig(simple("https://env:1")));
    await write(dir, "home/.kube/config", kubeconfig(simple("https://home:1")));
    const sa = join(dir, "sa");
    await write(sa, "token", "t");
    const all = { KUBECONFIG: env, KUBERNETES_SERVICE_HOST: "incluster", HOME: join(dir, "home") };
    const load = (path: string | undefined, env: Record<string, string>) =>
      loadClientOptions(path, { env, serviceAccountDir: sa }).then((o) => o.server);
    assert.equal(await load(flag, all), "https://flag:1");
    assert.equal(await load(undefined, all), "https://env:1");
    assert.equal(await load(undefined, { ...all, KUBECONFIG: "" }), "https://incluster:443");
    assert.equal(await load(undefined, { HOME: join(dir, "home") }), "https://home:1");
  });
});

const BROKEN: [string, Doc | string, RegExp][] = [
  ["no current-context", { ...simple("https://a:1"), current: undefined }, /no current-context is set/],
  ["an unknown context", { ...simple("https://a:1"), current: "nope" }, /context "nope" is not defined/],
  [
    "a context naming an unknown user",
    { ...simple("https://a:1"), contexts: { ctx: { cluster: "c", user: "ghost" } } },
    /user "ghost" is not defined/,
  ],
  [
    "a cluster without server",
    { ...simple("https://a:1"), clusters: { c: {} } },
    /cluster "c" is not defined or has no server/,
  ],
  [
    "insecure-skip-tls-verify",
    { ...simple("https://a:1"), clusters: { c: { server: "https://a:1", "insecure-skip-tls-verify": true } } },
    /cluster "c" sets insecure-skip-tls-verify, which espejo does not support/,
  ],
  ["invalid YAML", "clusters: [", /kubeconfig .*config: /],
];

for (const [name, doc, message] of BROKEN) {
  Deno.test(`kubeconfig with ${name} is refused with a message naming the file`, async () => {
    await withDir(async (dir) => {
      const path = await write(dir, "config", typeof doc === "string" ? doc : kubeconfig(doc));
      await assert.rejects(loadClientOptions(path, nowhere(dir)), (e: Error) => {
        assert.match(e.message, message);
        assert.ok(e.message.includes(path), e.message);
        return true;
      });
    });
  });
}

Deno.test("kubeconfig: nothing configured names every way to configure a cluster", async () => {
  await withDir(async (dir) => {
    await assert.rejects(
      loadClientOptions(undefined, nowhere(dir)),
      /pass --kubeconfig, set KUBECONFIG, run in a pod, or create ~\/.kube\/config/,
    );
    await assert.rejects(
      loadClientOptions(undefined, nowhere(dir, { KUBECONFIG: join(dir, "absent") })),
      /KUBECONFIG names no file that exists/,
    );
  });
});

Deno.test("kubeconfig: an exec plugin runs (through client-node) and its token is used", async () => {
  await withDir(async (dir) => {
    const credential = JSON.stringify({
      apiVersion: "client.authentication.k8s.io/v1beta1",
      kind: "ExecCredential",
      status: { token: "from-exec" },
    });
    const path = await write(
      dir,
      "config",
      kubeconfig(simple("https://a:1", {
        exec: {
          apiVersion: "client.authentication.k8s.io/v1beta1",
          command: "sh",
          args: ["-c", `echo '${credential}'`],
        },
      })),
    );
    const o = await loadClientOptions(path, nowhere(dir));
    assert.equal(o.server, "https://a:1");
    assert.deepEqual(o.caCerts, [CA]);
    assert.equal(await o.authorization?.(), "Bearer from-exec");
  });
});
