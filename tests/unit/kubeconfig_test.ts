import assert from "node:assert/strict";
import { join } from "node:path";
import FakeTimers from "@sinonjs/fake-timers";
import { loadClientOptions } from "../../lib/kube/kubeconfig.ts";
import { proxyFromEnvironment } from "../../lib/kube/proxy_env.ts";

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
    "insecure-skip-tls-verify and a CA",
    {
      ...simple("https://a:1"),
      clusters: {
        c: { server: "https://a:1", "insecure-skip-tls-verify": true, "certificate-authority-data": btoa(CA) },
      },
    },
    /cluster "c": specifying a root certificates file with the insecure flag is not allowed/,
  ],
  [
    "a proxy-url of a scheme client-go does not support",
    { ...simple("https://a:1"), clusters: { c: { server: "https://a:1", "proxy-url": "socks4://u:secret@p:1080" } } },
    /cluster "c": proxy-url socks4:\/\/u:\*\*\*@p:1080: scheme "socks4" is not supported \(only http, https, socks5\)/,
  ],
  [
    "a proxy-url that is not a URL",
    { ...simple("https://a:1"), clusters: { c: { server: "https://a:1", "proxy-url": "http://[oops" } } },
    /cluster "c": proxy-url http:\/\/\[oops is not a valid URL/,
  ],
  [
    "a server that is not a URL",
    { ...simple("https://a:1"), clusters: { c: { server: "10.0.0.1:6443" } } },
    /cluster "c": server 10\.0\.0\.1:6443 is not a URL/,
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
        assert.ok(!e.message.includes("secret"), e.message);
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

// ---------------------------------------------------------------------------------------------------------------
// insecure-skip-tls-verify, tls-server-name, proxy-url and the proxy environment

const cluster = (c: Record<string, unknown>, user: Record<string, unknown> = { token: "t0k" }): Doc => ({
  current: "ctx",
  clusters: { c: { server: "https://api.example:6443", ...c } },
  users: { u: user },
  contexts: { ctx: { cluster: "c", user: "u" } },
});

async function load(doc: Doc, env: Record<string, string> = {}, warnings: string[] = []) {
  let result: Awaited<ReturnType<typeof loadClientOptions>> | undefined;
  await withDir(async (dir) => {
    const path = await write(dir, "config", kubeconfig(doc));
    result = await loadClientOptions(path, { ...nowhere(dir, env), warn: (m) => warnings.push(m) });
  });
  return result!;
}

Deno.test("kubeconfig: insecure-skip-tls-verify without a CA is accepted with one warning", async () => {
  const warnings: string[] = [];
  const o = await load(cluster({ "insecure-skip-tls-verify": true }), {}, warnings);
  assert.equal(o.insecureSkipTlsVerify, true);
  assert.equal(o.caCerts, undefined);
  assert.equal(warnings.length, 1);
  assert.match(
    warnings[0],
    /^Cluster "c" in kubeconfig .* sets insecure-skip-tls-verify: espejo does not verify the API server's certificate/,
  );
});

Deno.test("kubeconfig: insecure-skip-tls-verify: false or absent verifies, without a warning", async () => {
  const warnings: string[] = [];
  assert.equal(
    (await load(cluster({ "insecure-skip-tls-verify": false }), {}, warnings)).insecureSkipTlsVerify,
    undefined,
  );
  assert.equal((await load(cluster({}), {}, warnings)).insecureSkipTlsVerify, undefined);
  assert.deepEqual(warnings, []);
});

Deno.test("kubeconfig: tls-server-name is passed on; insecure and the server name combine", async () => {
  const o = await load(cluster({ "certificate-authority-data": btoa(CA), "tls-server-name": "kubernetes.default" }));
  assert.equal(o.tlsServerName, "kubernetes.default");
  assert.deepEqual(o.caCerts, [CA]);
  const both = await load(cluster({ "insecure-skip-tls-verify": true, "tls-server-name": "api.internal" }));
  assert.equal(both.insecureSkipTlsVerify, true);
  assert.equal(both.tlsServerName, "api.internal");
});

Deno.test("kubeconfig: proxy-url of each scheme client-go supports, credentials kept", async () => {
  for (
    const [given, expected] of [
      ["http://proxy.corp:3128", "http://proxy.corp:3128/"],
      ["https://user:p%40ss@proxy.corp", "https://user:p%40ss@proxy.corp/"],
      ["socks5://127.0.0.1:1080", "socks5://127.0.0.1:1080"],
    ]
  ) {
    assert.equal((await load(cluster({ "proxy-url": given }))).proxy, expected, given);
  }
});

Deno.test("kubeconfig: proxy-url is used for every request, whatever NO_PROXY and HTTPS_PROXY say (http.ProxyURL)", async () => {
  const o = await load(
    cluster({ server: "https://127.0.0.1:6443", "proxy-url": "http://p:3128" }),
    { HTTPS_PROXY: "http://other:1", NO_PROXY: "*" },
  );
  assert.equal(o.proxy, "http://p:3128/");
});

Deno.test("kubeconfig: without proxy-url the environment decides, as client-go's default transport", async () => {
  const env = { HTTPS_PROXY: "proxy.corp:3128", NO_PROXY: ".internal" };
  assert.equal((await load(cluster({}), env)).proxy, "http://proxy.corp:3128/");
  assert.equal((await load(cluster({ server: "https://api.internal:6443" }), env)).proxy, undefined);
  assert.equal((await load(cluster({ server: "https://localhost:6443" }), env)).proxy, undefined);
  assert.equal((await load(cluster({}), {})).proxy, undefined);
});

Deno.test("kubeconfig: an exec plugin user keeps the cluster's TLS and proxy settings", async () => {
  const credential = JSON.stringify({
    apiVersion: "client.authentication.k8s.io/v1beta1",
    kind: "ExecCredential",
    status: { token: "from-exec" },
  });
  const o = await load(
    cluster({ "tls-server-name": "api.internal", "proxy-url": "http://p:3128" }, {
      exec: { apiVersion: "client.authentication.k8s.io/v1beta1", command: "sh", args: ["-c", `echo '${credential}'`] },
    }),
  );
  assert.equal(o.tlsServerName, "api.internal");
  assert.equal(o.proxy, "http://p:3128/");
  assert.equal(await o.authorization?.(), "Bearer from-exec");
});

Deno.test("kubeconfig: in-cluster, HTTPS_PROXY and NO_PROXY apply to the service address", async () => {
  await withDir(async (dir) => {
    const sa = join(dir, "sa");
    await write(sa, "token", "sa-token\n");
    const at = (env: Record<string, string>) =>
      loadClientOptions(undefined, {
        env: { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443", ...env },
        serviceAccountDir: sa,
      });
    assert.equal((await at({ HTTPS_PROXY: "http://p:3128" })).proxy, "http://p:3128/");
    assert.equal((await at({ HTTPS_PROXY: "http://p:3128", NO_PROXY: "10.96.0.0/12" })).proxy, undefined);
  });
});

Deno.test("proxyFromEnvironment refuses a proxy scheme it cannot use, naming it", () => {
  assert.throws(
    () => proxyFromEnvironment("https://api.example:6443", { HTTPS_PROXY: "ftp://user:secret@p:21" }),
    /^Error: HTTPS_PROXY ftp:\/\/user:\*\*\*@p:21: scheme "ftp" is not supported \(only http, https, socks5\)$/,
  );
});

// Go's own table (golang.org/x/net/http/httpproxy proxy_test.go, TestUseProxy): host (port 80) -> proxied?
const GO_NO_PROXY = "foobar.com, .barbaz.net, *.wildcard.io, 192.168.1.1, 192.168.1.2:81, 192.168.1.3:80, " +
  "10.0.0.0/30, 2001:db8::52:0:1, [2001:db8::52:0:2]:443, [2001:db8::52:0:3]:80, 2002:db8:a::45/64";
const GO_USE_PROXY: [string, boolean][] = [
  // Never proxy localhost:
  ["localhost", false],
  ["127.0.0.1", false],
  ["127.0.0.2", false],
  ["[::1]", false],
  ["[::2]", true], // not a loopback address
  ["192.168.1.1", false], // matches exact IPv4
  ["192.168.1.2", true], // ports do not match
  ["192.168.1.3", false], // matches exact IPv4:port
  ["192.168.1.4", true], // no match
  ["10.0.0.2", false], // matches IPv4/CIDR
  ["[2001:db8::52:0:1]", false], // matches exact IPv6
  ["[2001:db8::52:0:2]", true], // no match
  ["[2001:db8::52:0:3]", false], // matches exact [IPv6]:port
  ["[2002:db8:a::123]", false], // matches IPv6/CIDR
  ["[fe80::424b:c8be:1643:a1b6]", true], // no match
  ["barbaz.net", true], // does not match as .barbaz.net
  ["www.barbaz.net", false], // does match as .barbaz.net
  ["foobar.com", false], // does match as foobar.com
  ["www.foobar.com", false], // match because NO_PROXY includes "foobar.com"
  ["foofoobar.com", true], // not match as a part of foobar.com
  ["baz.com", true], // not match as a part of barbaz.com
  ["localhost.net", true], // not match as suffix of address
  ["local.localhost", true], // not match as prefix as address
  ["barbarbaz.net", true], // not match, wrong domain
  ["wildcard.io", true], // does not match as *.wildcard.io
  ["nested.wildcard.io", false], // match as *.wildcard.io
  ["awildcard.io", true], // not a match because of '*'
];

const PROXY = "http://proxy.corp:3128/";
const viaProxy = (server: string, env: Record<string, string>) =>
  proxyFromEnvironment(server, { HTTPS_PROXY: PROXY, ...env }) === PROXY;

Deno.test("proxyFromEnvironment follows Go's NO_PROXY table (TestUseProxy)", () => {
  for (const [host, proxied] of GO_USE_PROXY) {
    assert.equal(viaProxy(`https://${host}:80`, { NO_PROXY: GO_NO_PROXY }), proxied, host);
  }
});

Deno.test("proxyFromEnvironment: NO_PROXY=* bypasses every host; a malformed entry is ignored (Go's TestAllNoProxy, TestInvalidNoProxy)", () => {
  for (const [host] of GO_USE_PROXY) assert.equal(viaProxy(`https://${host}:80`, { NO_PROXY: "*" }), false, host);
  assert.equal(viaProxy("https://example.com:80", { NO_PROXY: ":1" }), true);
  assert.equal(viaProxy("https://example.com", { NO_PROXY: "nope.org, *, foo" }), false);
});

// More of Go's ProxyForURL table, and the rules around it: [server, environment, expected proxy].
const PROXY_FOR_URL: [string, Record<string, string>, string | undefined][] = [
  // A value without scheme is an http proxy; one with a scheme is kept.
  ["https://api.example", { HTTPS_PROXY: "127.0.0.1:8080" }, "http://127.0.0.1:8080/"],
  ["https://api.example", { HTTPS_PROXY: "cache.corp.example.com:1234" }, "http://cache.corp.example.com:1234/"],
  ["https://api.example", { HTTPS_PROXY: "cache.corp.example.com" }, "http://cache.corp.example.com/"],
  ["https://api.example", { HTTPS_PROXY: "localhost" }, "http://localhost/"],
  ["https://api.example", { HTTPS_PROXY: "https://cache.corp.example.com" }, "https://cache.corp.example.com/"],
  ["https://api.example", { HTTPS_PROXY: "socks5://127.0.0.1" }, "socks5://127.0.0.1"],
  ["https://api.example", { HTTPS_PROXY: "socks5h://127.0.0.1:1080" }, "socks5://127.0.0.1:1080"],
  ["https://api.example", { HTTPS_PROXY: "user:pw@proxy:3128" }, "http://user:pw@proxy:3128/"],
  // HTTPS_PROXY for https servers, HTTP_PROXY for http ones; the uppercase name first, an empty one skipped.
  ["https://secure.tld", { HTTP_PROXY: "http.proxy.tld", HTTPS_PROXY: "secure.proxy.tld" }, "http://secure.proxy.tld/"],
  ["http://insecure.tld", { HTTP_PROXY: "http.proxy.tld", HTTPS_PROXY: "secure.proxy.tld" }, "http://http.proxy.tld/"],
  ["https://secure.tld", { HTTP_PROXY: "http.proxy.tld" }, undefined],
  ["https://secure.tld", { HTTPS_PROXY: "upper:1", https_proxy: "lower:1" }, "http://upper:1/"],
  ["https://secure.tld", { HTTPS_PROXY: "", https_proxy: "lower:1" }, "http://lower:1/"],
  ["https://secure.tld", { ALL_PROXY: "http://all:1" }, undefined], // Go does not read ALL_PROXY
  ["https://secure.tld", { HTTPS_PROXY: "http://[bad" }, undefined], // unparsable: ignored, as Go ignores it
  // NO_PROXY names, as in Go's ProxyForURL table.
  ["https://example.com/", { NO_PROXY: "example.com", HTTPS_PROXY: "proxy" }, undefined],
  ["https://example.com/", { NO_PROXY: ".example.com", HTTPS_PROXY: "proxy" }, "http://proxy/"],
  ["https://example.com/", { NO_PROXY: "ample.com", HTTPS_PROXY: "proxy" }, "http://proxy/"],
  ["https://foo.example.com/", { NO_PROXY: "example.com", HTTPS_PROXY: "proxy" }, undefined],
  ["https://example.com/", { NO_PROXY: ".foo.com", HTTPS_PROXY: "proxy" }, "http://proxy/"],
  ["https://www.示例.com", { NO_PROXY: ".示例.com", HTTPS_PROXY: "proxy" }, undefined],
  ["https://www.示例.com", { NO_PROXY: "xn--fsq092h.com", HTTPS_PROXY: "proxy" }, undefined],
  ["https://www.xn--fsq092h.com", { NO_PROXY: "示例.com", HTTPS_PROXY: "proxy" }, undefined],
  // no_proxy when NO_PROXY is unset; names compared case-insensitively; entries trimmed.
  ["https://API.Example.com", { no_proxy: " example.COM ", HTTPS_PROXY: "proxy" }, undefined],
  // Ports: an entry with a port matches that port only; the URL's port defaults to 443.
  ["https://api.example.com:6443", { NO_PROXY: "api.example.com:6443", HTTPS_PROXY: "proxy" }, undefined],
  ["https://api.example.com", { NO_PROXY: "api.example.com:6443", HTTPS_PROXY: "proxy" }, "http://proxy/"],
  ["https://api.example.com", { NO_PROXY: "api.example.com:443", HTTPS_PROXY: "proxy" }, undefined],
  ["https://10.1.2.3", { NO_PROXY: "10.1.2.3:443", HTTPS_PROXY: "proxy" }, undefined],
  // A name entry never matches an IP; IPv4-mapped IPv6 is the IPv4 address.
  ["https://10.1.2.3", { NO_PROXY: "3", HTTPS_PROXY: "proxy" }, "http://proxy/"],
  ["https://[::ffff:10.0.0.1]", { NO_PROXY: "10.0.0.0/30", HTTPS_PROXY: "proxy" }, undefined],
  ["https://[::ffff:10.0.0.1]", { NO_PROXY: "10.0.0.1", HTTPS_PROXY: "proxy" }, undefined],
  ["https://10.0.0.1", { NO_PROXY: "::ffff:10.0.0.1", HTTPS_PROXY: "proxy" }, undefined],
  // An IPv6 network does not hold IPv4 addresses (Go's IPNet.Contains).
  ["https://10.0.0.1", { NO_PROXY: "::/0", HTTPS_PROXY: "proxy" }, "http://proxy/"],
  // Loopback, whatever the spelling Go accepts; Go's localhost exception is case-sensitive (host as written).
  ["https://127.10.20.30:6443", { HTTPS_PROXY: "proxy" }, undefined],
  ["https://[::ffff:127.0.0.1]:6443", { HTTPS_PROXY: "proxy" }, undefined],
  ["https://LOCALHOST:6443", { HTTPS_PROXY: "proxy" }, "http://proxy/"],
  ["https://localhost.localdomain:6443", { HTTPS_PROXY: "proxy" }, "http://proxy/"],
  // Go's IP parser rejects leading zeros, so "010.0.0.0/8" is not a network to Go; client-go's wrapper
  // (NewProxierWithNoProxyCIDR, ParseCIDRSloppy) reads it as 10.0.0.0/8.
  ["https://10.1.2.3", { NO_PROXY: "010.0.0.0/8", HTTPS_PROXY: "proxy" }, undefined],
  ["https://10.1.2.3", { NO_PROXY: "010.1.2.3", HTTPS_PROXY: "proxy" }, "http://proxy/"],
];

Deno.test("proxyFromEnvironment follows Go's ProxyForURL table and client-go's CIDR wrapper", () => {
  for (const [server, env, expected] of PROXY_FOR_URL) {
    assert.equal(proxyFromEnvironment(server, env), expected, `${server} ${JSON.stringify(env)}`);
  }
});

Deno.test("proxyFromEnvironment refuses HTTP_PROXY for an http server in a CGI environment, as Go does", () => {
  assert.throws(
    () => proxyFromEnvironment("http://api.example", { HTTP_PROXY: "http://10.1.2.3:8080", REQUEST_METHOD: "GET" }),
    /refusing to use HTTP_PROXY value in CGI environment; see golang.org\/s\/cgihttpproxy/,
  );
  assert.equal(
    proxyFromEnvironment("https://api.example", { HTTPS_PROXY: "https://secure.proxy.tld", REQUEST_METHOD: "GET" }),
    "https://secure.proxy.tld/",
  );
});
