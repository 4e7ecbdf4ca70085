/** Many namespaces fast: created a bounded number at a time, so that setting up N = 1,000 takes seconds. */
import type { HttpKubeClient } from "../../lib/kube/client.ts";
import { isAlreadyExists } from "../../lib/kube/errors.ts";
import { createNamespace } from "../../testenv/harness.ts";
import { pool } from "./pool.ts";

/** Creates `names` with `labels`; one that exists already (a rerun with the same prefix) is left as it is. */
export async function createNamespaces(
  admin: HttpKubeClient,
  names: string[],
  labels: Record<string, string>,
  concurrency = 16,
): Promise<void> {
  await pool(names, concurrency, (name) =>
    createNamespace(admin, name, labels).catch((e) => {
      if (!isAlreadyExists(e)) throw e;
    }));
}
