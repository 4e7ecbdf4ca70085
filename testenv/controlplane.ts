/**
 * A real, throwaway Kubernetes control plane for tests, demos and benchmarks: etcd, kube-apiserver and
 * (optionally) kube-controller-manager running only the namespace, garbage-collector and
 * clusterrole-aggregation controllers.
 *
 * Flags, certificates and readiness checks follow controller-runtime's envtest. Everything listens on free
 * loopback ports and lives in a temporary directory that {@link ControlPlane.stop} removes.
 */
import { join } from "node:path";
import { ensureBinaries } from "./build.ts";
import { type ControlPlaneCerts, makeCerts } from "./certs.ts";
import { HttpKubeClient } from "../lib/kube/client.ts";
import { isAlreadyExists } from "../lib/kube/errors.ts";

export interface ControlPlaneOptions {
  /** Write the API server's audit log (every request, Metadata level) so tests can count requests. */
  audit?: boolean;
  /** Run kube-controller-manager so namespace deletion and garbage collection complete. Default true. */
  controllerManager?: boolean;
  /** Where progress lines go. */
  log?: (line: string) => void;
}

/** One line of the API server's audit log, the fields tests use. */
export interface AuditEvent {
  verb: string;
  requestURI: string;
  user: { username: string; groups?: string[] };
  /** The user the request was sent as (impersonation), with its extras. */
  impersonatedUser?: { username: string; groups?: string[]; extra?: Record<string, string[]> };
  objectRef?: { resource?: string; namespace?: string; name?: string; apiGroup?: string; subresource?: string };
  responseStatus?: { code?: number };
  stage: string;
  requestReceivedTimestamp: string;
  /** When the stage was reached: at ResponseComplete, when the reply was done. */
  stageTimestamp?: string;
}

/** Credentials for one identity: what a kubeconfig needs. */
export interface Identity {
  username: string;
  token: string;
}

interface Proc {
  name: string;
  child: Deno.ChildProcess;
  logPath: string;
  done: Promise<Deno.CommandStatus>;
}

const GRACE_MS = 5_000;

export class ControlPlane {
  readonly admin: Identity;
  #apiserver?: Proc;
  #etcd?: Proc;
  #kcm?: Proc;
  #stopped = false;
  readonly #unload = () => this.#killAll();

  private constructor(
    readonly dir: string,
    readonly binDir: string,
    readonly certs: ControlPlaneCerts,
    readonly apiPort: number,
    readonly etcdPort: number,
    readonly opts: ControlPlaneOptions,
  ) {
    this.admin = { username: "testenv-admin", token: crypto.randomUUID() };
    globalThis.addEventListener("unload", this.#unload);
  }

  /** `https://127.0.0.1:<port>` */
  get server(): string {
    return `https://127.0.0.1:${this.apiPort}`;
  }

  get caPem(): string {
    return Deno.readTextFileSync(this.certs.caCert);
  }

  /** Path of the audit log, when started with `audit: true`. */
  get auditLogPath(): string {
    return join(this.dir, "audit.log");
  }

  /** Builds binaries if needed, then starts etcd, kube-apiserver and kube-controller-manager and waits for ready. */
  static async start(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
    const log = opts.log ?? ((l: string) => console.error(l));
    const binDir = await ensureBinaries(log);
    const dir = await Deno.makeTempDir({ prefix: "espejo-testenv-" });
    const certs = await makeCerts(dir);
    const [apiPort, etcdPort] = await freePorts(2);
    const cp = new ControlPlane(dir, binDir, certs, apiPort, etcdPort, opts);
    try {
      await Deno.writeTextFile(join(dir, "tokens.csv"), `${cp.admin.token},${cp.admin.username},1,"system:masters"\n`);
      await Deno.writeTextFile(
        join(dir, "audit-policy.yaml"),
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n",
      );
      await cp.#startEtcd();
      await cp.startApiServer();
      if (opts.controllerManager ?? true) await cp.#startControllerManager();
      log(`testenv: control plane ready at ${cp.server} (${dir})`);
      return cp;
    } catch (e) {
      await cp.stop();
      throw e;
    }
  }

  async #startEtcd(): Promise<void> {
    const [peerPort] = await freePorts(1);
    const url = `http://127.0.0.1:${this.etcdPort}`;
    this.#etcd = this.#spawn("etcd", [
      `--data-dir=${join(this.dir, "etcd")}`,
      `--listen-client-urls=${url}`,
      `--advertise-client-urls=${url}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=default=http://127.0.0.1:${peerPort}`,
      "--unsafe-no-fsync=true",
      // The memory tests keep up to 400 objects of 900 KiB (360 MB, with their history); the default quota is 2 GB.
      "--quota-backend-bytes=8589934592",
      "--log-level=warn",
    ]);
    await this.#waitFor(this.#etcd, async () => {
      const res = await fetch(`${url}/health`);
      const body = await res.text();
      return res.ok && body.includes('"health":"true"');
    });
  }

  /** Starts (or restarts) kube-apiserver on the same port and etcd, and waits until it serves requests. */
  async startApiServer(): Promise<void> {
    const c = this.certs;
    const args = [
      "--advertise-address=127.0.0.1",
      "--bind-address=127.0.0.1",
      `--secure-port=${this.apiPort}`,
      `--cert-dir=${join(this.dir, "apiserver-certs")}`,
      `--tls-cert-file=${c.servingCert}`,
      `--tls-private-key-file=${c.servingKey}`,
      `--client-ca-file=${c.caCert}`,
      `--token-auth-file=${join(this.dir, "tokens.csv")}`,
      `--etcd-servers=http://127.0.0.1:${this.etcdPort}`,
      "--service-cluster-ip-range=10.0.0.0/24",
      "--authorization-mode=RBAC",
      "--disable-admission-plugins=ServiceAccount",
      "--allow-privileged=true",
      `--service-account-key-file=${c.serviceAccountPub}`,
      `--service-account-signing-key-file=${c.serviceAccountKey}`,
      "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
    ];
    if (this.opts.audit) {
      args.push(
        `--audit-policy-file=${join(this.dir, "audit-policy.yaml")}`,
        `--audit-log-path=${this.auditLogPath}`,
        "--audit-log-format=json",
        "--audit-log-mode=blocking",
        // kube-apiserver 1.35 takes 0 as its logger's default, 100 MB, not as unlimited; a bench at 100,000 objects writes
        // more, and a rotation mid-window would lose requests from the count.
        "--audit-log-maxsize=1000000",
      );
    }
    this.#apiserver = this.#spawn("kube-apiserver", args);
    const client = this.client();
    try {
      await this.#waitFor(this.#apiserver, async () => {
        await client.request({ method: "GET", path: "/readyz" }).catch((e) => {
          // /readyz answers in text, which the JSON client cannot decode: a decode error means 200.
          if (e instanceof SyntaxError) return;
          throw e;
        });
        await client.request({ method: "GET", path: "/api/v1/namespaces/default" });
        return true;
      });
    } finally {
      client.close();
    }
  }

  /** Stops kube-apiserver (SIGTERM, then SIGKILL after a grace period); etcd keeps running. */
  async stopApiServer(): Promise<void> {
    if (this.#apiserver) await terminate(this.#apiserver);
    this.#apiserver = undefined;
  }

  async #startControllerManager(): Promise<void> {
    const kubeconfig = join(this.dir, "admin.kubeconfig");
    await Deno.writeTextFile(kubeconfig, this.kubeconfig(this.admin));
    this.#kcm = this.#spawn("kube-controller-manager", [
      `--kubeconfig=${kubeconfig}`,
      "--controllers=namespace-controller,garbage-collector-controller,clusterrole-aggregation-controller",
      "--leader-elect=false",
      "--secure-port=0",
      "--concurrent-namespace-syncs=5",
    ]);
    // It has no endpoint to poll without serving; give it a moment to crash on bad flags.
    const early = await Promise.race([this.#kcm.done, delay(1500).then(() => undefined)]);
    if (early) throw this.#failure(this.#kcm, `exited with code ${early.code}`);
  }

  /** A kubeconfig (YAML) for the given identity. */
  kubeconfig(identity: Identity = this.admin): string {
    return kubeconfigYaml(this.server, this.caPem, identity);
  }

  /** An HTTP client for the given identity (admin by default). Close it when done. */
  client(identity: Identity = this.admin): HttpKubeClient {
    return new HttpKubeClient({
      server: this.server,
      caCerts: [this.caPem],
      authorization: () => `Bearer ${identity.token}`,
      userAgent: "espejo-testenv",
    });
  }

  /** A restricted identity bound to `clusterRole`; see {@link createServiceAccount}. */
  async serviceAccount(
    namespace: string,
    name: string,
    clusterRole: string,
    role?: string | string[],
  ): Promise<Identity> {
    const admin = this.client();
    try {
      return await createServiceAccount(admin, namespace, name, clusterRole, role);
    } finally {
      admin.close();
    }
  }

  /** Reads the audit log (requires `audit: true`). */
  async auditEvents(): Promise<AuditEvent[]> {
    const text = await Deno.readTextFile(this.auditLogPath).catch(() => "");
    return text.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l) as AuditEvent);
  }

  /** Stops everything (SIGTERM, SIGKILL after a grace period) and removes the temporary directory. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    globalThis.removeEventListener("unload", this.#unload);
    for (const p of [this.#kcm, this.#apiserver, this.#etcd]) if (p) await terminate(p);
    await Deno.remove(this.dir, { recursive: true }).catch(() => {});
  }

  #killAll(): void {
    for (const p of [this.#kcm, this.#apiserver, this.#etcd]) {
      try {
        p?.child.kill("SIGKILL");
      } catch { /* already gone */ }
    }
  }

  #spawn(name: string, args: string[]): Proc {
    const logPath = join(this.dir, `${name}.log`);
    const file = Deno.openSync(logPath, { write: true, create: true, append: true });
    const child = new Deno.Command(join(this.binDir, name), {
      args,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    // Both streams go to one log file; the writer closes the file when both are done.
    const writer = file.writable.getWriter();
    const drain = async (s: ReadableStream<Uint8Array>) => {
      for await (const chunk of s) await writer.write(chunk);
    };
    Promise.all([drain(child.stdout), drain(child.stderr)]).finally(() => writer.close().catch(() => {}));
    return { name, child, logPath, done: child.status };
  }

  /** Polls `ready` until it returns true; fails fast with the log tail if the process exits. */
  async #waitFor(proc: Proc, ready: () => Promise<boolean>, timeoutMs = 90_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let exited: Deno.CommandStatus | undefined;
    proc.done.then((s) => exited = s);
    let lastError = "";
    while (Date.now() < deadline) {
      if (exited) throw this.#failure(proc, `exited with code ${exited.code}`);
      try {
        if (await ready()) return;
      } catch (e) {
        lastError = e instanceof Error ? e.message : String(e);
      }
      await delay(200);
    }
    throw this.#failure(proc, `not ready after ${timeoutMs / 1000}s (last error: ${lastError})`);
  }

  #failure(proc: Proc, what: string): Error {
    let tail = "";
    try {
      tail = Deno.readTextFileSync(proc.logPath).trimEnd().split("\n").slice(-25).join("\n");
    } catch { /* no log */ }
    return new Error(`testenv: ${proc.name} ${what}; last lines of ${proc.logPath}:\n${tail}`);
  }
}

async function terminate(p: Proc): Promise<void> {
  try {
    p.child.kill("SIGTERM");
  } catch {
    return; // already exited
  }
  const stopped = await Promise.race([p.done.then(() => true), delay(GRACE_MS).then(() => false)]);
  if (!stopped) {
    try {
      p.child.kill("SIGKILL");
    } catch { /* gone meanwhile */ }
    await p.done;
  }
}

/** Free loopback TCP ports, found by binding port 0 and releasing it. */
export async function freePorts(n: number): Promise<number[]> {
  const listeners = Array.from({ length: n }, () => Deno.listen({ hostname: "127.0.0.1", port: 0 }));
  const ports = listeners.map((l) => (l.addr as Deno.NetAddr).port);
  for (const l of listeners) l.close();
  return await Promise.resolve(ports);
}

export function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * A restricted identity: ServiceAccount `namespace/name`, bound to ClusterRole `clusterRole` (and, if given, the Roles
 * `role` in `namespace`), with a token from the TokenRequest API. This is how the controller runs in a pod.
 */
export async function createServiceAccount(
  admin: HttpKubeClient,
  namespace: string,
  name: string,
  clusterRole: string,
  role?: string | string[],
): Promise<Identity> {
  const create = async (path: string, body: unknown) => {
    await admin.request({ method: "POST", path, body }).catch((e) => {
      if (!isAlreadyExists(e)) throw e;
    });
  };
  await create("/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
  await create(`/api/v1/namespaces/${namespace}/serviceaccounts`, {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name },
  });
  const subjects = [{ kind: "ServiceAccount", name, namespace }];
  await create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: `${namespace}-${name}-${clusterRole}` },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: clusterRole },
    subjects,
  });
  for (const r of [role ?? []].flat()) {
    await create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/rolebindings`, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: `${name}-${r}` },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: r },
      subjects,
    });
  }
  const tr = await admin.request<{ status: { token: string } }>({
    method: "POST",
    path: `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`,
    body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds: 86400 } },
  });
  return { username: `system:serviceaccount:${namespace}:${name}`, token: tr.status.token };
}

/** A kubeconfig (YAML) for `identity` on the API server at `server`. */
export function kubeconfigYaml(server: string, caPem: string, identity: Identity): string {
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: testenv",
    "  cluster:",
    `    server: ${server}`,
    `    certificate-authority-data: ${btoa(caPem)}`,
    "users:",
    `- name: ${identity.username}`,
    "  user:",
    `    token: ${identity.token}`,
    "contexts:",
    "- name: testenv",
    "  context:",
    "    cluster: testenv",
    `    user: ${identity.username}`,
    "current-context: testenv",
    "",
  ].join("\n");
}
