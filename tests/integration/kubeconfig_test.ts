/**
 * Kubeconfig transport options against the real API server: insecure-skip-tls-verify, tls-server-name, proxy-url
 * (http, https, socks5) and HTTPS_PROXY/NO_PROXY, each loaded by `loadClientOptions` from a kubeconfig file and used
 * by `HttpKubeClient` for requests and a watch. The API server's certificate names 127.0.0.1, localhost, kubernetes
 * and kubernetes.default; a forwarder on 127.0.0.2 reaches it by an address the certificate does not name, and the
 * test proxy resolves `kubernetes` to 127.0.0.1.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { HttpKubeClient } from "../../lib/kube/client.ts";
import { loadClientOptions } from "../../lib/kube/kubeconfig.ts";
import { clientFor, type TestCluster, testCluster, uniqueName } from "../../testenv/shared.ts";
import { startForwarder, startProxy, type TestProxy } from "../../testenv/proxy.ts";
import { shippedFlags } from "../../testenv/permissions.ts";
import { repoRoot } from "../../testenv/build.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

interface Loaded {
  client: HttpKubeClient;
  warnings: string[];
}

/** Writes a kubeconfig with this cluster entry and the admin's token, and builds a client from it. */
async function fromKubeconfig(
  c: TestCluster,
  cluster: Record<string, unknown>,
  env: Record<string, string> = {},
): Promise<Loaded> {
  const dir = await Deno.makeTempDir({ prefix: "espejo-kubeconfig-it-" });
  try {
    const path = join(dir, "config");
    await Deno.writeTextFile(
      path,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        "current-context": "it",
        clusters: [{ name: "it", cluster: { server: c.server, ...cluster } }],
        users: [{ name: "admin", user: { token: c.admin.token } }],
        contexts: [{ name: "it", context: { cluster: "it", user: "admin" } }],
      }),
    );
    const warnings: string[] = [];
    const options = await loadClientOptions(path, {
      env,
      serviceAccountDir: join(dir, "no-sa"),
      warn: (m) => warnings.push(m),
    });
    return { client: new HttpKubeClient({ ...options, userAgent: "espejo-kubeconfig-test" }), warnings };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const ca = (c: TestCluster) => ({ "certificate-authority-data": btoa(c.caPem) });
const apiPort = (c: TestCluster) => Number(new URL(c.server).port);

/** GET /version, a namespace list and the first event of a namespace watch all work through `client`. */
async function works(client: HttpKubeClient): Promise<void> {
  const version = await client.request<{ gitVersion?: string }>({ method: "GET", path: "/version", timeoutMs: 10_000 });
  assert.match(version.gitVersion ?? "", /^v1\./);
  const list = await client.request<{ items: unknown[] }>({
    method: "GET",
    path: "/api/v1/namespaces",
    query: { limit: 5 },
    timeoutMs: 10_000,
  });
  assert.ok(list.items.length > 0);
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(new DOMException("no watch event", "TimeoutError")), 10_000);
  try {
    for await (const ev of client.watch("/api/v1/namespaces", { timeoutSeconds: 10 }, stop.signal)) {
      assert.equal(ev.type, "ADDED");
      break;
    }
  } finally {
    clearTimeout(timer);
  }
}

/** The reason a request failed, with the cause fetch wraps it in. */
async function failure(client: HttpKubeClient): Promise<string> {
  try {
    await client.request({ method: "GET", path: "/version", timeoutMs: 10_000 });
  } catch (e) {
    return `${e instanceof Error ? e.message : e} ${(e as Error).cause ?? ""}`;
  }
  throw new Error("the request succeeded");
}

async function withProxy(fn: (proxy: TestProxy) => Promise<void>, tls?: { cert: string; key: string }) {
  const proxy = startProxy({ resolve: (h) => (h === "kubernetes" ? "127.0.0.1" : h), tls });
  try {
    await fn(proxy);
  } finally {
    await proxy.close();
  }
}

/** The API server's own certificate and key, to serve the test's https proxy under a name the CA vouches for. */
async function servingPair(c: TestCluster): Promise<{ cert: string; key: string }> {
  const certs = c.own?.certs ?? {
    servingCert: join(Deno.env.get("TESTENV_DIR")!, "serving.crt"),
    servingKey: join(Deno.env.get("TESTENV_DIR")!, "serving.key"),
  };
  return { cert: await Deno.readTextFile(certs.servingCert), key: await Deno.readTextFile(certs.servingKey) };
}

Deno.test(
  "kubeconfig insecure-skip-tls-verify without a CA: requests and a watch work, with one warning",
  opts,
  async () => {
    const c = await testCluster();
    const { client, warnings } = await fromKubeconfig(c, { "insecure-skip-tls-verify": true });
    try {
      await works(client);
      assert.equal(warnings.length, 1);
      assert.match(warnings[0], /sets insecure-skip-tls-verify: espejo does not verify the API server's certificate/);
    } finally {
      client.close();
    }
  },
);

Deno.test("kubeconfig without a CA and without insecure-skip-tls-verify: the unknown CA is refused", opts, async () => {
  const c = await testCluster();
  const { client } = await fromKubeconfig(c, {});
  try {
    assert.match(await failure(client), /certificate|issuer/i);
  } finally {
    client.close();
  }
});

Deno.test(
  "kubeconfig tls-server-name: an address the certificate does not name works with a name it has",
  opts,
  async () => {
    const c = await testCluster();
    const forwarder = startForwarder({ hostname: "127.0.0.1", port: apiPort(c) });
    const server = `https://${forwarder.hostname}:${forwarder.port}`;
    try {
      const without = await fromKubeconfig(c, { server, ...ca(c) });
      try {
        assert.match(
          await failure(without.client),
          /x509: certificate is valid for 127\.0\.0\.1, localhost, kubernetes, kubernetes\.default, not 127\.0\.0\.2/,
        );
      } finally {
        without.client.close();
      }
      for (const name of ["localhost", "kubernetes.default"]) {
        const { client } = await fromKubeconfig(c, { server, ...ca(c), "tls-server-name": name });
        try {
          await works(client);
        } finally {
          client.close();
        }
      }
      // A name the certificate does not have fails even at an address it names: the name, not the host, is verified.
      const wrong = await fromKubeconfig(c, { ...ca(c), "tls-server-name": "wrong.example" });
      try {
        assert.match(await failure(wrong.client), /altnames|certificate/i);
      } finally {
        wrong.client.close();
      }
    } finally {
      await forwarder.close();
    }
  },
);

Deno.test(
  "kubeconfig proxy-url http://: every connection is a CONNECT through the proxy, with its credentials",
  opts,
  async () => {
    const c = await testCluster();
    await withProxy(async (proxy) => {
      const url = new URL(proxy.url);
      url.username = "espejo";
      url.password = "s3cr:t";
      const { client } = await fromKubeconfig(c, { ...ca(c), "proxy-url": url.href });
      try {
        await works(client);
      } finally {
        client.close();
      }
      assert.ok(proxy.tunnels.length > 0, "requests went through the proxy");
      for (const t of proxy.tunnels) {
        assert.deepEqual(t, {
          protocol: "connect",
          target: `127.0.0.1:${apiPort(c)}`,
          authorization: `Basic ${btoa("espejo:s3cr:t")}`,
        });
      }
    });
  },
);

Deno.test("kubeconfig proxy-url socks5:// and https:// proxies work", opts, async () => {
  const c = await testCluster();
  await withProxy(async (proxy) => {
    const { client } = await fromKubeconfig(c, { ...ca(c), "proxy-url": proxy.url.replace(/^http:/, "socks5:") });
    try {
      await works(client);
    } finally {
      client.close();
    }
    assert.ok(proxy.tunnels.length > 0);
    assert.ok(proxy.tunnels.every((t) => t.protocol === "socks5" && t.target === `127.0.0.1:${apiPort(c)}`));
  });
  await withProxy(async (proxy) => {
    const { client } = await fromKubeconfig(c, { ...ca(c), "proxy-url": proxy.url });
    try {
      await works(client);
    } finally {
      client.close();
    }
    assert.ok(proxy.tunnels.length > 0);
    assert.ok(proxy.url.startsWith("https://"));
  }, await servingPair(c));
});

Deno.test(
  "kubeconfig proxy-url with insecure-skip-tls-verify or tls-server-name: http, https and socks5 tunnels",
  opts,
  async () => {
    const c = await testCluster();
    const tls = await servingPair(c);
    for (const scheme of ["http", "socks5", "https"]) {
      await withProxy(async (proxy) => {
        const proxyUrl = proxy.url.replace(/^https?:/, `${scheme}:`);
        const insecure = await fromKubeconfig(c, { "insecure-skip-tls-verify": true, "proxy-url": proxyUrl });
        try {
          await works(insecure.client);
        } finally {
          insecure.client.close();
        }
        const named = await fromKubeconfig(c, {
          server: `https://kubernetes:${apiPort(c)}`,
          ...ca(c),
          "tls-server-name": "localhost",
          "proxy-url": proxyUrl,
        });
        try {
          await works(named.client);
        } finally {
          named.client.close();
        }
        const targets = new Set(proxy.tunnels.map((t) => t.target));
        assert.deepEqual([...targets].sort(), [`127.0.0.1:${apiPort(c)}`, `kubernetes:${apiPort(c)}`], scheme);
      }, scheme === "https" ? tls : undefined);
    }
  },
);

Deno.test(
  "HTTPS_PROXY without proxy-url is used for the server as Go decides, and NO_PROXY bypasses it",
  opts,
  async () => {
    const c = await testCluster();
    await withProxy(async (proxy) => {
      // `kubernetes` is named by the certificate and resolved by the proxy only.
      const viaName = { server: `https://kubernetes:${apiPort(c)}`, ...ca(c) };
      const through = async (cluster: Record<string, unknown>, env: Record<string, string>) => {
        const before = proxy.tunnels.length;
        const { client } = await fromKubeconfig(c, cluster, env);
        try {
          await works(client);
        } finally {
          client.close();
        }
        return proxy.tunnels.length - before;
      };
      assert.ok(await through(viaName, { HTTPS_PROXY: proxy.url }) > 0);
      assert.ok(await through(viaName, { https_proxy: proxy.url, NO_PROXY: ".kubernetes,kubernetes:1" }) > 0);
      // Go never proxies loopback addresses: the same variable leaves 127.0.0.1 direct.
      assert.equal(await through(ca(c), { HTTPS_PROXY: proxy.url }), 0);
      for (const noProxy of ["kubernetes", `kubernetes:${apiPort(c)}`, "*", "example.org, KUBERNETES"]) {
        const before = proxy.tunnels.length;
        const { client } = await fromKubeconfig(c, viaName, { HTTPS_PROXY: proxy.url, NO_PROXY: noProxy });
        try {
          // Direct, the client must resolve `kubernetes` itself, which no resolver here knows.
          await failure(client);
        } finally {
          client.close();
        }
        assert.equal(proxy.tunnels.length, before, `NO_PROXY=${noProxy} bypasses the proxy`);
      }
    });
  },
);

Deno.test(
  "HttpKubeClient ignores Deno's own reading of the proxy variables (it would proxy 127.0.0.1)",
  opts,
  async () => {
    const c = await testCluster();
    await withProxy(async (proxy) => {
      // Set only while the clients are made (synchronously): that is when Deno reads them.
      const before = Deno.env.get("HTTPS_PROXY");
      Deno.env.set("HTTPS_PROXY", proxy.url);
      let ours: HttpKubeClient;
      let raw: Deno.HttpClient;
      try {
        ours = clientFor(c);
        raw = Deno.createHttpClient({ caCerts: [c.caPem] });
      } finally {
        if (before === undefined) Deno.env.delete("HTTPS_PROXY");
        else Deno.env.set("HTTPS_PROXY", before);
      }
      try {
        await ours.request({ method: "GET", path: "/version" });
        assert.equal(proxy.tunnels.length, 0, "our client went direct");
        const res = await fetch(`${c.server}/version`, { client: raw });
        await res.body?.cancel();
        assert.ok(proxy.tunnels.length > 0, "a plain Deno client would have gone through the proxy");
      } finally {
        ours.close();
        raw.close();
      }
    });
  },
);

/**
 * Runs main.ts with the shipped permission set and `kubeconfig` until its own log says its caches synced, then stops
 * it; returns its log. The condition is read from this child's output, and the child listens on no port: a port
 * picked free, or a default one, can be taken by another test's controller on a busy machine. It watches a namespace
 * of its own: run cluster-wide as admin, it would sync the SyncConfigs of the tests running beside it.
 */
async function runUntilReady(kubeconfig: string, env: Record<string, string>): Promise<string> {
  const child = new Deno.Command(Deno.execPath(), {
    // No listening ports: the defaults (:8080, :8081) are shared by every controller a test starts without them.
    args: [
      "run",
      ...shippedFlags(),
      join(repoRoot, "main.ts"),
      ...["--kubeconfig", kubeconfig, "--log-format=json", "--metrics-addr=0", "--health-addr=0"],
    ],
    env: { WATCH_NAMESPACE: uniqueName("kubeconfig-it"), ...env },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  let log = "";
  try {
    const synced = (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of child.stdout) {
        log += decoder.decode(chunk, { stream: true });
        if (/"message":"Caches synced/.test(log)) return true;
      }
      return false;
    })();
    const deadline = new Promise<false>((r) => setTimeout(() => r(false), 30_000));
    if (!(await Promise.race([synced, deadline]))) {
      child.kill("SIGKILL");
      throw new Error(`the controller did not sync its caches within 30 s:\n${(log + (await stderr)).slice(-3000)}`);
    }
  } finally {
    try {
      child.kill("SIGTERM");
    } catch { /* already gone */ }
    await child.status;
  }
  return log + (await stderr);
}

Deno.test(
  "main with the shipped permissions: insecure-skip-tls-verify without a proxy syncs, with one warning",
  opts,
  async () => {
    const c = await testCluster();
    const dir = await Deno.makeTempDir({ prefix: "espejo-kubeconfig-main-" });
    try {
      const path = join(dir, "insecure");
      await Deno.writeTextFile(
        path,
        JSON.stringify({
          apiVersion: "v1",
          kind: "Config",
          "current-context": "it",
          clusters: [{ name: "it", cluster: { server: c.server, "insecure-skip-tls-verify": true } }],
          users: [{ name: "admin", user: { token: c.admin.token } }],
          contexts: [{ name: "it", context: { cluster: "it", user: "admin" } }],
        }),
      );
      const log = await runUntilReady(path, {});
      assert.doesNotMatch(log, /Requires sys access/);
      const warnings = log.split("\n").filter((l) => l.includes("insecure-skip-tls-verify"));
      assert.equal(warnings.length, 1, log.slice(-2000));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

Deno.test(
  "main with the shipped permissions: insecure-skip-tls-verify through a proxy-url, and HTTPS_PROXY",
  opts,
  async () => {
    const c = await testCluster();
    const dir = await Deno.makeTempDir({ prefix: "espejo-kubeconfig-main-" });
    const kubeconfig = (cluster: Record<string, unknown>) =>
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        "current-context": "it",
        clusters: [{ name: "it", cluster }],
        users: [{ name: "admin", user: { token: c.admin.token } }],
        contexts: [{ name: "it", context: { cluster: "it", user: "admin" } }],
      });
    try {
      await withProxy(async (proxy) => {
        const path = join(dir, "insecure");
        await Deno.writeTextFile(
          path,
          kubeconfig({ server: c.server, "insecure-skip-tls-verify": true, "proxy-url": proxy.url }),
        );
        const log = await runUntilReady(path, {});
        const warnings = log.split("\n").filter((l) => l.includes("insecure-skip-tls-verify"));
        assert.equal(warnings.length, 1, log.slice(-2000));
        assert.equal(JSON.parse(warnings[0]).level, "warning");
        assert.match(warnings[0], /does not verify the API server's certificate/);
        assert.ok(proxy.tunnels.length > 0, "the controller's requests went through the proxy");
      });
      await withProxy(async (proxy) => {
        const path = join(dir, "env");
        await Deno.writeTextFile(
          path,
          kubeconfig({ server: `https://kubernetes:${apiPort(c)}`, "certificate-authority-data": btoa(c.caPem) }),
        );
        await runUntilReady(path, { HTTPS_PROXY: proxy.url, NO_PROXY: "127.0.0.1,.svc" });
        assert.ok(proxy.tunnels.length > 0, "HTTPS_PROXY was used");
        assert.ok(proxy.tunnels.every((t) => t.target === `kubernetes:${apiPort(c)}`));
      });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);
