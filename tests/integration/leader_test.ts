/**
 * Two controller processes with leader election: only the leader writes; when it is killed the other takes over
 * within the lease duration; SIGTERM releases the Lease and exits 0.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { repoRoot } from "../../testenv/build.ts";
import { freePorts, kubeconfigYaml } from "../../testenv/controlplane.ts";
import { espejoIdentity } from "../../testenv/espejo_rbac.ts";
import { applyObject } from "../../testenv/apply.ts";
import { clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";
import { auditNow, createNamespace, createSyncConfig, getObject, requestsBy } from "../../testenv/harness.ts";
import type { Identity } from "../../testenv/controlplane.ts";
import { shippedFlags } from "../../testenv/permissions.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const LEASE = "bd39f6a0.appuio.ch";

interface Replica {
  identity: Identity;
  child: Deno.ChildProcess;
  metricsPort: number;
  output: Promise<string>;
}

async function isLeader(r: Replica): Promise<boolean> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${r.metricsPort}/metrics`)).text();
    return /^espejo_leader 1$/m.test(text);
  } catch {
    return false;
  }
}

Deno.test("Only the leader writes; a standby takes over after SIGKILL; SIGTERM releases the Lease", opts, async () => {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("leader");
  const prefix = uniqueName("led");
  const dir = await Deno.makeTempDir();
  const replicas: Replica[] = [];
  try {
    await createNamespace(admin, cfgNs);
    await applyObject(admin, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "espejo-leader-election", namespace: cfgNs },
      rules: [{ apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "create", "update"] }],
    } as never);
    for (const name of ["espejo-a", "espejo-b"]) {
      const identity = await espejoIdentity(admin, cfgNs, { name, roles: ["espejo-leader-election"] });
      const kubeconfig = join(dir, name);
      await Deno.writeTextFile(kubeconfig, kubeconfigYaml(c.server, c.caPem, identity));
      const [metricsPort] = await freePorts(1);
      const child = new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          ...shippedFlags(),
          join(repoRoot, "main.ts"),
          `--kubeconfig=${kubeconfig}`,
          `--metrics-addr=127.0.0.1:${metricsPort}`,
          "--health-addr=0",
          "--enable-leader-election",
          "--lease-duration=4s",
          "--renew-deadline=3s",
          "--retry-period=500ms",
          "--reconcile-interval=200ms",
        ],
        env: { WATCH_NAMESPACE: cfgNs, POD_NAMESPACE: cfgNs },
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const output = Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()])
        .then(([o, e]) => o + e);
      replicas.push({ identity, child, metricsPort, output });
    }
    const since = auditNow();
    await createNamespace(admin, `${prefix}-one`);
    await createSyncConfig(admin, cfgNs, "ha", {
      namespaceSelector: { matchNames: [`${prefix}-.*`] },
      syncItems: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "ha" }, data: { a: "1" } }],
    });
    await eventually(() => getObject(admin, `/api/v1/namespaces/${prefix}-one/configmaps/ha`), 30_000, "first sync");
    const leaderIndex = await eventually(
      async () => {
        const flags = await Promise.all(replicas.map(isLeader));
        return flags.filter(Boolean).length === 1 ? flags.indexOf(true) + 1 : undefined;
      },
      20_000,
      "exactly one leader",
    ) - 1;
    const leader = replicas[leaderIndex];
    const standby = replicas[1 - leaderIndex];
    const writes = (id: Identity, from: string) =>
      requestsBy(c, id, from).then((events) =>
        events.filter((e) =>
          ["create", "update", "patch", "delete"].includes(e.verb) && e.objectRef?.resource !== "leases"
        )
      );
    assert.ok((await writes(leader.identity, since)).length > 0, "the leader wrote");
    assert.deepEqual(await writes(standby.identity, since), [], "the standby wrote nothing");

    // SIGKILL: no release; the standby must wait for the Lease to expire, then take over.
    leader.child.kill("SIGKILL");
    await leader.child.status;
    const killedAt = Date.now();
    await createNamespace(admin, `${prefix}-two`);
    await eventually(() => getObject(admin, `/api/v1/namespaces/${prefix}-two/configmaps/ha`), 30_000, "takeover");
    const takeover = Date.now() - killedAt;
    // Lease duration (4 s) plus one retry period and the sync itself, with room for a loaded CI machine.
    assert.ok(takeover < 4_000 + 4_000, `took over in ${takeover} ms (lease 4 s)`);
    assert.ok(await isLeader(standby));

    // SIGTERM while passes run every 200 ms: exit 0 within 10 s and leave the Lease free.
    const sentAt = Date.now();
    standby.child.kill("SIGTERM");
    const status = await standby.child.status;
    assert.equal(status.code, 0, await standby.output);
    assert.ok(Date.now() - sentAt < 10_000);
    const lease = await admin.request<{ spec: { holderIdentity?: string } }>({
      method: "GET",
      path: `/apis/coordination.k8s.io/v1/namespaces/${cfgNs}/leases/${LEASE}`,
    });
    assert.equal(lease.spec.holderIdentity ?? "", "", "the Lease was released");
  } finally {
    for (const r of replicas) {
      try {
        r.child.kill("SIGKILL");
      } catch { /* already gone */ }
      await r.child.status;
    }
    admin.close();
    await Deno.remove(dir, { recursive: true });
  }
});
