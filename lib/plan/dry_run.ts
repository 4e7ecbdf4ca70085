/**
 * `espejo plan --server-dry-run`: each write of the plan is sent with `dryRun=All`, so that admission (webhooks,
 * ValidatingAdmissionPolicies, quotas) and validation say what they would say, and nothing is stored. An update the
 * server would make a no-op (the differences were its own defaults) leaves the plan. What the server says is shown
 * without the values it quotes, and, for a Secret, without any of the Secret's values (lib/model/redact.ts).
 */
import type { KubeClient } from "../kube/client.ts";
import { collectionPath, objectPath } from "../kube/discovery.ts";
import { isInvalid } from "../kube/errors.ts";
import type { KubeObject } from "../kube/objects.ts";
import { contentHash } from "../model/drift.ts";
import { scrubSecretValues } from "../model/redact.ts";
import { bodyAt, created, liveParts } from "../sync/applier.ts";
import { reasonOf } from "../sync/failures.ts";
import type { PlanEntry } from "./plan.ts";
import { FIELD_MANAGER } from "../model/markers.ts";

const DRY_RUN = { dryRun: "All", fieldManager: FIELD_MANAGER };

/** The entries as the server would take them: failing ones become `fail`, no-op updates are left out. */
export async function dryRun(
  client: KubeClient,
  entries: PlanEntry[],
  progress: (line: string) => void,
): Promise<{ entries: PlanEntry[]; noops: number }> {
  const out: PlanEntry[] = [];
  let noops = 0;
  for (const [i, e] of entries.entries()) {
    if (i && i % 100 === 0) progress(`espejo plan: dry run ${i} of ${entries.length}`);
    const r = e.resource;
    if (!r || e.action === "fail") {
      out.push(e);
      continue;
    }
    try {
      if (e.action === "create") {
        const body = created({ desired: e.desired!, cfgKey: e.cfgKey });
        await client.request({ method: "POST", path: collectionPath(r, e.namespace), body, query: DRY_RUN });
      } else if (e.action === "update" || e.action === "adopt") {
        const reply = await client.request<KubeObject>({
          method: "PUT",
          path: objectPath(r, e.namespace, e.name),
          body: bodyAt(e.desired!, liveParts(e.live!)),
          query: DRY_RUN,
        });
        if (e.action === "update" && contentHash(reply) === contentHash(e.live!)) {
          noops++;
          continue;
        }
      } else {
        const body = {
          apiVersion: "v1",
          kind: "DeleteOptions",
          propagationPolicy: "Background",
          preconditions: { uid: e.uid },
          // The server reads a DELETE's options from its body when there is one, and ignores the query's dryRun.
          dryRun: ["All"],
        };
        await client.request({ method: "DELETE", path: objectPath(r, e.namespace, e.name), body, query: DRY_RUN });
      }
      out.push(e);
    } catch (err) {
      out.push(rejected(e, err));
    }
  }
  return { entries: out, noops };
}

/** The entry after the server refused its dry run with `err`: a recreate where forceRecreate allows it, else a fail. */
export function rejected(e: PlanEntry, err: unknown): PlanEntry {
  // Scrubbed by the resource the write goes to (an entry without one was never sent): not by how the item spells it.
  const why = scrubSecretValues(reasonOf(err), [e.desired, e.live], e.resource);
  if (e.forceRecreate && isInvalid(err) && (e.action === "update" || e.action === "adopt")) {
    return { ...e, action: "recreate", reason: `update rejected (${why}); forceRecreate is set` };
  }
  return { ...e, action: "fail", reason: `the API server would reject the ${e.action}: ${why}` };
}
