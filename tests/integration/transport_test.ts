/**
 * The protocol each kind of request gets from the fetch transport (lib/kube/transport_fetch.ts), read from the TLS
 * handshake of a listener that offers both: requests share HTTP/2, a watch reads its stream over HTTP/1.1, where what
 * the controller has not read yet waits in the socket rather than in the process.
 */
import assert from "node:assert/strict";
import { selfSignedCert } from "../../lib/app/self_signed.ts";
import { fetchTransport } from "../../lib/kube/transport_fetch.ts";

Deno.test("fetch transport: a request may use HTTP/2, a watch uses HTTP/1.1", async () => {
  const { cert, key } = await selfSignedCert(["127.0.0.1"]);
  const listener = Deno.listenTls({ hostname: "127.0.0.1", port: 0, cert, key, alpnProtocols: ["h2", "http/1.1"] });
  const negotiated: (string | null)[] = [];
  const serving = (async () => {
    for await (const conn of listener) {
      // Only the handshake matters: the connection is closed before any reply, and the request fails.
      negotiated.push(await conn.handshake().then((h) => h.alpnProtocol, () => "no handshake"));
      conn.close();
    }
  })();
  const transport = fetchTransport({ caCerts: [cert] });
  const url = new URL(`https://127.0.0.1:${listener.addr.port}/api/v1/namespaces`);
  const protocolOf = async (watch: boolean) => {
    const before = negotiated.length;
    await transport.send(url, { method: "GET", headers: {}, watch }).then((r) => r.body?.cancel(), () => {});
    return negotiated.slice(before);
  };
  try {
    assert.deepEqual(await protocolOf(false), ["h2"], "a request");
    assert.deepEqual(await protocolOf(true), ["http/1.1"], "a watch");
  } finally {
    transport.close();
    listener.close();
    await serving.catch(() => {});
  }
});
