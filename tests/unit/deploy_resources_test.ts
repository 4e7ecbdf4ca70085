/** deploy/'s Deployment fits where the Go espejo's did: a user who keeps their limits loses nothing. */
import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { join } from "node:path";
import { repoRoot } from "../../testenv/build.ts";

/** The Go espejo v0.5.0 Deployment's container limits (config/manager/manager.yaml). */
const GO_ESPEJO_LIMITS = { cpu: "300m", memory: "100Mi" };

const MI = 2 ** 20;
const bytes = (q: string) => {
  const m = /^(\d+)(Mi|Gi|M)?$/.exec(q);
  assert.ok(m, `a memory quantity: ${q}`);
  return Number(m[1]) * ({ Mi: MI, Gi: 1024 * MI, M: 1e6 }[m[2] ?? ""] ?? 1);
};

Deno.test("deploy/'s container asks for no more than the Go espejo's limits, and sets the same limits", () => {
  const documents = parseAllDocuments(Deno.readTextFileSync(join(repoRoot, "deploy", "deployment.yaml")));
  const deployment = documents.map((d) => d.toJS()).find((d) => d?.kind === "Deployment");
  const [container] = deployment.spec.template.spec.containers;
  const { requests, limits } = container.resources;
  assert.deepEqual(limits, GO_ESPEJO_LIMITS);
  assert.ok(bytes(requests.memory) <= bytes(limits.memory), `request ${requests.memory} within the limit`);
});

Deno.test("deploy/ keeps one of its two replicas through a drain and prefers them on different nodes", () => {
  const read = (file: string) =>
    parseAllDocuments(Deno.readTextFileSync(join(repoRoot, "deploy", file))).map((d) => d.toJS());
  const deployment = read("deployment.yaml").find((d) => d?.kind === "Deployment");
  const pdb = read("pdb.yaml").find((d) => d?.kind === "PodDisruptionBudget");
  const kustomization = read("kustomization.yaml")[0];
  assert.ok(kustomization.resources.includes("pdb.yaml"), "kubectl apply -k deploy/ installs the budget");
  assert.equal(deployment.spec.replicas, 2);
  assert.equal(pdb.spec.maxUnavailable, 1, "a drain takes at most one replica at a time");
  assert.deepEqual(pdb.spec.selector.matchLabels, deployment.spec.selector.matchLabels);
  assert.equal(pdb.metadata.namespace, deployment.metadata.namespace);
  const terms = deployment.spec.template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution;
  assert.deepEqual(
    terms.map((t: { podAffinityTerm: { topologyKey: string } }) => t.podAffinityTerm.topologyKey),
    ["kubernetes.io/hostname", "topology.kubernetes.io/zone"],
  );
  for (const t of terms) {
    assert.deepEqual(t.podAffinityTerm.labelSelector.matchLabels, deployment.spec.template.metadata.labels);
  }
});
