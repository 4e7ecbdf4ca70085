/**
 * The reflector's store against the real API server: the reply of a write that arrives after the watch has moved
 * on (deleted, or replaced by a new object of the same name) must not bring back what is gone.
 */
import assert from "node:assert/strict";
import { Reflector } from "../../lib/kube/reflector.ts";
import type { KubeObject } from "../../lib/kube/objects.ts";
import { clientFor, eventually, testCluster, uniqueName } from "../../testenv/shared.ts";
import { createNamespace } from "./harness.ts";

const opts = { sanitizeOps: false, sanitizeResources: false };

async function withReflector(
  fn: (r: Reflector<KubeObject>, ns: string, admin: ReturnType<typeof clientFor>) => Promise<void>,
): Promise<void> {
  const admin = clientFor(await testCluster());
  const ns = uniqueName("reflector");
  await createNamespace(admin, ns);
  const stop = new AbortController();
  const reflector = new Reflector<KubeObject>(admin, {
    path: `/api/v1/namespaces/${ns}/configmaps`,
    decode: (raw) => raw,
  });
  reflector.run(stop.signal);
  try {
    await reflector.synced;
    await fn(reflector, ns, admin);
  } finally {
    stop.abort();
    admin.close();
  }
}

const configMap = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name } });

Deno.test("Reflector.upsert of a late reply does not bring back a deleted object", opts, async () => {
  await withReflector(async (reflector, ns, admin) => {
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const reply = await admin.request<KubeObject>({ method: "POST", path, body: configMap("gone") });
    await eventually(() => reflector.get(`${ns}/gone`), 10_000, "the watch to deliver the create");
    await admin.request({ method: "DELETE", path: `${path}/gone` });
    await eventually(() => !reflector.get(`${ns}/gone`), 10_000, "the watch to deliver the delete");
    reflector.upsert(reply);
    assert.equal(reflector.get(`${ns}/gone`), undefined, "the deleted object stays gone");
  });
});

Deno.test("Reflector.upsert of a late reply does not replace a newer object of the same name", opts, async () => {
  await withReflector(async (reflector, ns, admin) => {
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const first = await admin.request<KubeObject>({ method: "POST", path, body: configMap("same") });
    await admin.request({ method: "DELETE", path: `${path}/same` });
    const second = await admin.request<KubeObject>({ method: "POST", path, body: configMap("same") });
    await eventually(
      () => reflector.get(`${ns}/same`)?.metadata?.uid === second.metadata?.uid,
      10_000,
      "the watch to deliver the new object",
    );
    reflector.upsert(first);
    assert.equal(reflector.get(`${ns}/same`)?.metadata?.uid, second.metadata?.uid, "the new object stays");
  });
});

Deno.test("Reflector.upsert of a fresh reply is stored before the watch delivers it", opts, async () => {
  await withReflector(async (reflector, ns, admin) => {
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    await admin.request<KubeObject>({ method: "POST", path, body: configMap("fresh") });
    const current = await eventually(() => reflector.get(`${ns}/fresh`), 10_000, "the create");
    // A reply newer than anything the watch saw (its version ahead of the store's) is taken at once.
    const ahead = structuredClone(current);
    ahead.metadata!.resourceVersion = String(BigInt(current.metadata!.resourceVersion!) + 1_000_000n);
    ahead.metadata!.labels = { marker: "reply" };
    reflector.upsert(ahead);
    assert.equal(reflector.get(`${ns}/fresh`)?.metadata?.labels?.marker, "reply");
  });
});
