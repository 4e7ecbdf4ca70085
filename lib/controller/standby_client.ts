/**
 * The client the controller's parts are given: it refuses every write (POST, PUT, PATCH, DELETE) while the replica
 * does not lead, so that a standby (standby.ts) writes nothing whatever a part might try. Reads and watches pass (the
 * standby's caches list and watch; what it must not read, an object at a time, is kept from it by never running
 * units). The Lease's own requests do not go through it: the elector (lib/kube/leader.ts) has the process's client.
 */
import { getLogger } from "@logtape/logtape";
import type { KubeClient, KubeRequest } from "../kube/client.ts";

const log = getLogger(["espejo", "controller"]);

/** A write asked of a replica that does not hold the Lease: a bug, refused before anything is sent. */
export class NotLeadingError extends Error {}

/** `client`, refusing writes while `leading()` is false. */
export function writesWhenLeading(client: KubeClient, leading: () => boolean): KubeClient {
  const guarded: KubeClient = {
    request<T>(req: KubeRequest): Promise<T> {
      if (req.method === "GET" || leading()) return client.request<T>(req);
      const e = new NotLeadingError(`${req.method} ${req.path} refused: this replica does not hold the Lease`);
      log.error("{message}", { message: e.message });
      return Promise.reject(e);
    },
    watch: (path, query, signal, accept) => client.watch(path, query, signal, accept),
  };
  const listPage = client.listPage?.bind(client);
  if (listPage) guarded.listPage = listPage;
  return guarded;
}
