/**
 * The control plane shared by one `deno task test` run. `tests/run.ts` starts it once and passes its coordinates
 * in TESTENV_* variables; a test file run on its own (`deno test -A tests/integration/x_test.ts`) starts its own.
 */
import { join } from "node:path";
import { HttpKubeClient } from "../lib/kube/client.ts";
import { type AuditEvent, ControlPlane, type Identity } from "./controlplane.ts";
import { repoRoot } from "./build.ts";
import { applyYaml } from "./apply.ts";

export interface TestCluster {
  server: string;
  caPem: string;
  admin: Identity;
  auditLogPath: string;
  /** Present only when this process started the control plane. */
  own?: ControlPlane;
}

let shared: Promise<TestCluster> | undefined;

export function testCluster(): Promise<TestCluster> {
  shared ??= (async () => {
    const server = Deno.env.get("TESTENV_SERVER");
    if (server) {
      return {
        server,
        caPem: await Deno.readTextFile(Deno.env.get("TESTENV_CA_FILE")!),
        admin: { username: "testenv-admin", token: Deno.env.get("TESTENV_ADMIN_TOKEN")! },
        auditLogPath: Deno.env.get("TESTENV_AUDIT_LOG")!,
      };
    }
    const cp = await ControlPlane.start({ audit: true });
    await installBase(cp.client());
    globalThis.addEventListener("unload", () => cp.stop());
    return { server: cp.server, caPem: cp.caPem, admin: cp.admin, auditLogPath: cp.auditLogPath, own: cp };
  })();
  return shared;
}

/** The CRD and the controller's ClusterRoles from deploy/, as every integration test needs them. */
export async function installBase(client: HttpKubeClient): Promise<void> {
  try {
    await applyYaml(client, await Deno.readTextFile(join(repoRoot, "deploy/crds/sync.appuio.ch_syncconfigs.yaml")));
    await applyYaml(client, await Deno.readTextFile(join(repoRoot, "deploy/rbac/cluster_role.yaml")));
    // Wait until the CRD is served and the aggregated ClusterRole has its rules.
    await eventually(
      async () => {
        await client.request({ method: "GET", path: "/apis/sync.appuio.ch/v1alpha1/syncconfigs" });
        const role = await client.request<{ rules?: unknown[] }>({
          method: "GET",
          path: "/apis/rbac.authorization.k8s.io/v1/clusterroles/espejo-manager",
        });
        return (role.rules?.length ?? 0) > 0;
      },
      60_000,
      "the CRD to be served and ClusterRole espejo-manager to be aggregated",
    );
  } finally {
    client.close();
  }
}

export function clientFor(c: TestCluster, identity: Identity = c.admin): HttpKubeClient {
  return new HttpKubeClient({
    server: c.server,
    caCerts: [c.caPem],
    authorization: () => `Bearer ${identity.token}`,
    userAgent: "espejo-test",
  });
}

export async function auditEvents(c: TestCluster): Promise<AuditEvent[]> {
  const text = await auditCaughtUp(c);
  // The API server may be writing the last line as it is read (a busy suite caught one cut short): only lines that
  // end in a newline are whole.
  const whole = text.slice(0, text.lastIndexOf("\n") + 1);
  return whole.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l) as AuditEvent);
}

/**
 * The audit log's text once it holds every request answered before this call. The API server writes a request's
 * event after it has sent the reply, so a client can see a write's effect before its event is in the file (on a busy
 * machine, long enough to miss it). A request sent now and found in the log afterwards is the barrier.
 */
async function auditCaughtUp(c: TestCluster): Promise<string> {
  const read = () => Deno.readTextFile(c.auditLogPath).catch(() => "");
  const marker = `audit-barrier-${crypto.randomUUID()}`;
  const admin = clientFor(c);
  try {
    await admin.request({ method: "GET", path: `/api/v1/namespaces/default/configmaps/${marker}` }).catch(() => {});
  } finally {
    admin.close();
  }
  return await eventually(
    async () => {
      const text = await read();
      return text.includes(marker) ? text : undefined;
    },
    30_000,
    "the audit log to hold a request sent before it was read",
  );
}

/** Polls `check` until it returns a truthy value or the deadline passes; the last error is rethrown. */
export async function eventually<T>(
  check: () => Promise<T> | T,
  timeoutMs = 20_000,
  what = "condition",
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v as NonNullable<T>;
      last = new Error(`${what} not met`);
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `Timed out after ${timeoutMs} ms waiting for ${what}: ${last instanceof Error ? last.message : last}`,
      );
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A name unique to this run, for namespaces and objects of one test. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
}
