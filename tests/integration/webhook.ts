/**
 * A validating admission webhook served by the test itself (HTTPS on 127.0.0.1, a certificate from a CA of its
 * own), for ConfigMaps carrying one test label: the handler sees each request as the API server makes it and may
 * hold it (a slow webhook) before it allows it. The API server waits for the answer, so what the handler holds is
 * the request of whoever sent it.
 */
import type { HttpKubeClient } from "../../lib/kube/client.ts";
import { makeCerts } from "../../testenv/certs.ts";
import { eventually, uniqueName } from "../../testenv/shared.ts";

export interface AdmissionRequest {
  uid: string;
  operation: "CREATE" | "UPDATE" | "DELETE" | "CONNECT";
  name?: string;
  namespace?: string;
  userInfo?: { username?: string };
  dryRun?: boolean;
}

export interface TestWebhook {
  stop(): Promise<void>;
}

const WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";

/**
 * Serves a webhook for `operations` on ConfigMaps labelled `label` and registers it; resolves once the API server
 * calls it. `handle` runs for every request of `operations` but the readiness probe; it is allowed when that settles.
 */
export async function startWebhook(
  admin: HttpKubeClient,
  opts: {
    label: Record<string, string>;
    operations: AdmissionRequest["operation"][];
    probeNamespace: string;
    handle: (req: AdmissionRequest) => Promise<void> | void;
  },
): Promise<TestWebhook> {
  const dir = await Deno.makeTempDir({ prefix: "espejo-webhook-" });
  const certs = await makeCerts(dir);
  let probed = false;
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    cert: await Deno.readTextFile(certs.servingCert),
    key: await Deno.readTextFile(certs.servingKey),
    onListen: () => {},
  }, async (request) => {
    const review = await request.json() as { request: AdmissionRequest };
    const req = review.request;
    if (req.dryRun && req.name?.startsWith("probe-")) probed = true;
    else if (opts.operations.includes(req.operation)) await opts.handle(req);
    return Response.json({
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      response: { uid: req.uid, allowed: true },
    });
  });
  const name = uniqueName("espejo-test-webhook");
  const operations = [...new Set([...opts.operations, "CREATE"])];
  await admin.request({
    method: "POST",
    path: WEBHOOKS,
    body: {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: { name },
      webhooks: [{
        name: "configmaps.espejo-test.example.com",
        clientConfig: {
          url: `https://127.0.0.1:${server.addr.port}/validate`,
          caBundle: btoa(await Deno.readTextFile(certs.caCert)),
        },
        // CREATE always, for the probe below.
        rules: [{ apiGroups: [""], apiVersions: ["v1"], resources: ["configmaps"], operations }],
        objectSelector: { matchLabels: opts.label },
        sideEffects: "None",
        admissionReviewVersions: ["v1"],
        timeoutSeconds: 30,
        failurePolicy: "Fail",
      }],
    },
  });
  // The API server picks the configuration up from its own watch: probe with dry-run creates until it calls.
  await eventually(
    async () => {
      await admin.request({
        method: "POST",
        path: `/api/v1/namespaces/${opts.probeNamespace}/configmaps`,
        query: { dryRun: "All" },
        body: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: uniqueName("probe"), labels: opts.label } },
      });
      return probed;
    },
    30_000,
    "the webhook to be called",
  );
  return {
    async stop() {
      await admin.request({ method: "DELETE", path: `${WEBHOOKS}/${name}` }).catch(() => {});
      await server.shutdown();
      await Deno.remove(dir, { recursive: true });
    },
  };
}
