/**
 * `deno task cluster`: a local control plane in the foreground, for people. Writes an admin kubeconfig to
 * `.testenv/kubeconfig` and stops cleanly on Ctrl-C or SIGTERM.
 */
import { join } from "node:path";
import { testenvDir } from "./build.ts";
import { ControlPlane } from "./controlplane.ts";

const cp = await ControlPlane.start({ audit: Deno.args.includes("--audit") }).catch((e) => {
  console.error(e instanceof Error ? e.message : e);
  Deno.exit(1);
});
const kubeconfigPath = join(testenvDir, "kubeconfig");
await Deno.mkdir(testenvDir, { recursive: true });
await Deno.writeTextFile(kubeconfigPath, cp.kubeconfig(), { mode: 0o600 });

console.log(`
Control plane running at ${cp.server}
  export KUBECONFIG=${kubeconfigPath}
  kubectl get namespaces
  kubectl apply -k deploy/            # the CRD, RBAC and Deployment (the Deployment needs a node; use deno task dev)
  deno task dev --kubeconfig ${kubeconfigPath}
Logs and data: ${cp.dir}${cp.opts.audit ? `\nAudit log: ${cp.auditLogPath}` : ""}
Press Ctrl-C to stop.`);

const stopped = new Promise<void>((resolve) => {
  for (const sig of ["SIGINT", "SIGTERM"] as const) Deno.addSignalListener(sig, () => resolve());
});
await stopped;
console.log("Stopping the control plane ...");
await cp.stop();
await Deno.remove(kubeconfigPath).catch(() => {});
Deno.exit(0);
