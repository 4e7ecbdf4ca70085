/**
 * Statuses the controller writes to a real API server, as GitOps tools read them (docs/gitops.md): after an edit,
 * `kubectl wait --for=condition=Ready` returns only with the new generation's outcome, and Argo CD's health check and
 * Flux's health check expressions (run as the page prints them, testenv/gitops_health.ts) say "in progress" until
 * then; an invalid spec and an errored sync are failures, for kstatus's generic rules too where they can tell.
 */
import assert from "node:assert/strict";
import { clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";
import { kubeconfigYaml } from "../../testenv/controlplane.ts";
import type { HttpKubeClient } from "../../lib/kube/client.ts";
import { auditNow, createNamespace, createSyncConfig, requestsBy, startController } from "../../testenv/harness.ts";
import {
  argoHealth,
  fluxHealth,
  kstatusGeneric,
  kubectlWaitMet,
  type StatusObject,
} from "../../testenv/gitops_health.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };
const cm = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: { k: "v" } });

type Conditioned = StatusObject & {
  status?: { synchronizedItemCount?: number; failedItemCount?: number };
};

async function read(admin: HttpKubeClient, ns: string, name: string): Promise<Conditioned> {
  return await admin.request<Conditioned>({
    method: "GET",
    path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${ns}/syncconfigs/${name}`,
  });
}

async function edit(admin: HttpKubeClient, ns: string, name: string, spec: unknown): Promise<number> {
  const updated = await admin.request<StatusObject>({
    method: "PATCH",
    path: `/apis/sync.appuio.ch/v1alpha1/namespaces/${ns}/syncconfigs/${name}`,
    contentType: "application/merge-patch+json",
    body: { spec },
  });
  return updated.metadata.generation!;
}

/** `kubectl wait --for=condition=<cond>`; fails the test if kubectl gives up. */
async function kubectlWait(kubeconfig: string, ns: string, name: string, cond: string): Promise<void> {
  const out = await new Deno.Command("kubectl", {
    args: [
      "--kubeconfig",
      kubeconfig,
      "-n",
      ns,
      "wait",
      `--for=condition=${cond}`,
      `syncconfig/${name}`,
      "--timeout=90s",
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  assert.equal(out.code, 0, `kubectl wait --for=condition=${cond}: ${text.decode(out.stderr)}`);
}

const observed = (o: StatusObject, type: string) => o.status?.conditions?.find((c) => c.type === type);
const verdicts = (o: StatusObject) => [argoHealth(o).status, fluxHealth(o), kstatusGeneric(o)];

/** A controller writing at `qps`, `n` namespaces to target, and an admin kubeconfig for kubectl; `end` cleans up. */
async function scene(prefix: string, n: number, qps: number) {
  const c = await testCluster();
  const admin = clientFor(c);
  const cfgNs = uniqueName("cfg");
  const targets = Array.from({ length: n }, (_, i) => uniqueName(`${prefix}${i}`));
  const kubeconfig = await Deno.makeTempFile({ suffix: ".kubeconfig" });
  await Deno.writeTextFile(kubeconfig, kubeconfigYaml(c.server, c.caPem, c.admin));
  const ctl = await startController(c, { watchNamespace: cfgNs, qps });
  for (const ns of targets) await createNamespace(admin, ns);
  const end = async () => {
    await ctl.stop();
    admin.close();
    await Deno.remove(kubeconfig);
  };
  return { c, admin, cfgNs, targets, kubeconfig, ctl, end };
}

Deno.test(
  "After an edit, kubectl wait, Argo CD and Flux wait for the new generation; invalid and errored are failures",
  opts,
  async () => {
    // 20 writes a second: the edit below (120 creates) takes about 6 s to sync, long enough to be seen in progress.
    const { c, admin, cfgNs, targets, kubeconfig, ctl, end } = await scene("gitops", 3, 20);
    try {
      const selector = { matchNames: targets };
      await createSyncConfig(admin, cfgNs, "defaults", { namespaceSelector: selector, syncItems: [cm("one")] });
      await kubectlWait(kubeconfig, cfgNs, "defaults", "Ready");
      const first = await read(admin, cfgNs, "defaults");
      assert.equal(first.status?.synchronizedItemCount, 3);
      assert.equal(observed(first, "Ready")?.observedGeneration, 1);
      assert.deepEqual(verdicts(first), ["Healthy", "Current", "Current"]);

      // Generation 2: 40 items in each namespace.
      const since = auditNow();
      const items = Array.from({ length: 40 }, (_, i) => cm(`item-${i}`));
      assert.equal(await edit(admin, cfgNs, "defaults", { syncItems: items }), 2);
      const edited = await read(admin, cfgNs, "defaults");
      assert.equal(observed(edited, "Ready")?.observedGeneration, 1, "the status is still generation 1's");
      assert.equal(kubectlWaitMet(edited, "Ready"), false);
      // kstatus's generic rules cannot tell (docs/gitops.md says so); Argo CD and Flux with the documented checks can.
      assert.deepEqual(verdicts(edited), ["Progressing", "InProgress", "Current"]);

      await kubectlWait(kubeconfig, cfgNs, "defaults", "Ready");
      const second = await read(admin, cfgNs, "defaults");
      assert.equal(second.status?.synchronizedItemCount, 120, "kubectl wait returned with generation 2's outcome");
      assert.equal(observed(second, "Ready")?.observedGeneration, 2);
      assert.deepEqual(verdicts(second), ["Healthy", "Current", "Current"]);
      const writes = (await requestsBy(c, ctl.identity, since)).filter((e) =>
        e.verb === "patch" && e.objectRef?.subresource === "status" && e.objectRef?.name === "defaults"
      );
      assert.equal(writes.length, 1, "one status write for the burst of generation 2");

      // Generation 3: invalid.
      assert.equal(await edit(admin, cfgNs, "defaults", { namespaceSelector: { matchNames: ["a("] } }), 3);
      await kubectlWait(kubeconfig, cfgNs, "defaults", "Invalid");
      const invalid = await read(admin, cfgNs, "defaults");
      assert.equal(observed(invalid, "Ready")?.status, "False");
      assert.equal(observed(invalid, "Stalled")?.observedGeneration, 3);
      assert.deepEqual(verdicts(invalid), ["Degraded", "Failed", "Failed"]);
      assert.match(argoHealth(invalid).message, /matchNames\[0\] is not a valid regular expression/);

      // Generation 4: valid again, with only an item that fails everywhere (a cluster-scoped kind).
      const clusterRole = { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: "x" } };
      assert.equal(await edit(admin, cfgNs, "defaults", { namespaceSelector: selector, syncItems: [clusterRole] }), 4);
      await kubectlWait(kubeconfig, cfgNs, "defaults", "Errored");
      const errored = await read(admin, cfgNs, "defaults");
      assert.equal(errored.status?.failedItemCount, 3);
      assert.deepEqual(
        errored.status?.conditions?.map((c) => [c.type, c.status, c.observedGeneration]),
        [["Ready", "False", 4], ["Errored", "True", 4], ["Invalid", "False", 4]],
        "Stalled went with the invalid spec",
      );
      // Errored may be transient (it is retried): kstatus has no abnormal-true condition for it.
      assert.deepEqual(verdicts(errored), ["Degraded", "Failed", "Current"]);
    } finally {
      await end();
    }
  },
);

Deno.test(
  "An edit during a burst: kubectl wait returns only once every namespace has the new generation",
  opts,
  async () => {
    // At the deployed 50 writes a second, each of the 4 workers (as deployed) is inside one namespace's 150-item unit
    // for about 12 s; the edit comes while they are, so those units finish after the new generation was queued.
    const { admin, cfgNs, targets, kubeconfig, end } = await scene("midburst", 4, 50);
    const items = (v: string) =>
      Array.from({ length: 150 }, (_, i) => ({ ...cm(`item-${i}`), data: { generation: v } }));
    try {
      await createSyncConfig(admin, cfgNs, "big", {
        namespaceSelector: { matchNames: targets },
        syncItems: items("1"),
      });
      await eventually(async () => (await withData(admin, targets, "1")) > 0, 20_000, "the burst to begin");
      assert.equal(await edit(admin, cfgNs, "big", { syncItems: items("2") }), 2);
      await kubectlWait(kubeconfig, cfgNs, "big", "Ready");
      const done = await read(admin, cfgNs, "big");
      assert.equal(observed(done, "Ready")?.observedGeneration, 2);
      assert.equal(await withData(admin, targets, "2"), 600, "every object has generation 2's data when Ready says so");
      assert.equal(done.status?.synchronizedItemCount, 600);
    } finally {
      await end();
    }
  },
);

/** ConfigMaps espejo wrote in these namespaces whose data says `generation`. */
async function withData(admin: HttpKubeClient, namespaces: string[], generation: string): Promise<number> {
  let n = 0;
  for (const ns of namespaces) {
    const list = await admin.request<{ items: { data?: Record<string, string> }[] }>({
      method: "GET",
      path: `/api/v1/namespaces/${ns}/configmaps`,
      query: { labelSelector: "sync.appuio.ch/managed-by=espejo" },
    });
    n += list.items.filter((o) => o.data?.generation === generation).length;
  }
  return n;
}
