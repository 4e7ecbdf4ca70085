/**
 * Proxy dialling for the node:https transport, which has no proxy support of its own (fetch dials its proxies
 * itself): HTTP CONNECT over TCP or TLS, and SOCKS5. The proxy's replies are read by {@link SocketReader}, which hands
 * the socket back with nothing consumed past them, so TLS to the API server starts on a clean stream.
 */
import type { Socket } from "node:net";
import { proxyCredentials } from "./transport.ts";
import { encodeBase64 } from "./objects.ts";

/** A proxy that has not finished its handshake in this time is given up (the request's own timeout is longer). */
const PROXY_HANDSHAKE_TIMEOUT_MS = 30_000;

/** A URL hostname as node:net takes it: an IPv6 address without its brackets. */
export const bare = (hostname: string) => hostname.replace(/^\[(.*)\]$/, "$1");

/**
 * A connection to `host:port` through `proxy`: HTTP CONNECT over TCP (`http://`) or TLS (`https://`), or SOCKS5
 * (`socks5://`, the name resolved by the proxy, as Go's SOCKS dialer does). Credentials come from the URL's userinfo.
 * An https proxy's certificate is verified for the proxy's own name against the cluster's CA and the system's roots,
 * or not at all with insecure-skip-tls-verify (Go's transport uses the cluster's TLS settings for the proxy too).
 */
export async function tunnel(
  proxy: URL,
  host: string,
  port: number,
  proxyTls: { ca?: string[]; rejectUnauthorized: boolean },
): Promise<Socket> {
  const [net, tls] = await Promise.all([import("node:net"), import("node:tls")]);
  const proxyHost = bare(proxy.hostname);
  const secure = proxy.protocol === "https:";
  const proxyPort = Number(proxy.port || (secure ? 443 : proxy.protocol === "socks5:" ? 1080 : 80));
  const socket: Socket = secure
    ? tls.connect({
      host: proxyHost,
      port: proxyPort,
      ...proxyTls,
      ...(net.isIP(proxyHost) ? {} : { servername: proxyHost }),
    })
    : net.connect({ host: proxyHost, port: proxyPort });
  socket.setTimeout(PROXY_HANDSHAKE_TIMEOUT_MS, () => {
    socket.destroy(
      new Error(`Proxy ${proxy.host} did not complete the handshake within ${PROXY_HANDSHAKE_TIMEOUT_MS} ms`),
    );
  });
  const reader = new SocketReader(socket, `proxy ${proxy.host}`);
  try {
    await reader.connected(secure ? "secureConnect" : "connect");
    const auth = proxyCredentials(proxy);
    if (proxy.protocol === "socks5:") await socks5Connect(socket, reader, host, port, auth);
    else await httpConnect(socket, reader, host, port, auth, proxy.host);
    reader.release();
    socket.setTimeout(0);
    socket.on("error", () => {}); // the TLS socket on top reports failures to the request
    return socket;
  } catch (e) {
    socket.destroy();
    throw e;
  }
}

async function httpConnect(
  socket: Socket,
  reader: SocketReader,
  host: string,
  port: number,
  auth: { username: string; password: string } | undefined,
  proxyName: string,
): Promise<void> {
  const target = host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
  let head = `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n`;
  if (auth) head += `Proxy-Authorization: Basic ${encodeBase64(`${auth.username}:${auth.password}`)}\r\n`;
  socket.write(`${head}\r\n`);
  const reply = await reader.read((b) => {
    const end = indexOfHeadEnd(b);
    if (end < 0 && b.length > 65536) throw new Error(`Proxy ${proxyName} sent a reply head over 64 KiB`);
    return end;
  });
  const status = new TextDecoder().decode(reply).split("\r\n")[0];
  // As Go's transport: only 200 opens the tunnel.
  if (!/^HTTP\/1\.[01] 200( |$)/.test(status)) {
    throw new Error(`Proxy ${proxyName} refused CONNECT ${target}: ${status}`);
  }
}

function indexOfHeadEnd(b: Uint8Array): number {
  for (let i = 3; i < b.length; i++) {
    if (b[i] === 10 && b[i - 1] === 13 && b[i - 2] === 10 && b[i - 3] === 13) return i + 1;
  }
  return -1;
}

const SOCKS_REPLIES: Record<number, string> = {
  1: "general SOCKS server failure",
  2: "connection not allowed by ruleset",
  3: "network unreachable",
  4: "host unreachable",
  5: "connection refused",
  6: "TTL expired",
  7: "command not supported",
  8: "address type not supported",
};

/** RFC 1928 CONNECT, with RFC 1929 user name and password when the URL has them. */
async function socks5Connect(
  socket: Socket,
  reader: SocketReader,
  host: string,
  port: number,
  auth: { username: string; password: string } | undefined,
): Promise<void> {
  const enc = new TextEncoder();
  socket.write(new Uint8Array(auth ? [5, 2, 0, 2] : [5, 1, 0]));
  const [, method] = await reader.read((b) => (b.length >= 2 ? 2 : -1));
  if (method === 2 && auth) {
    const user = enc.encode(auth.username);
    const pass = enc.encode(auth.password);
    if (user.length > 255 || pass.length > 255) throw new Error("SOCKS5 user name or password longer than 255 bytes");
    socket.write(new Uint8Array([1, user.length, ...user, pass.length, ...pass]));
    const [, ok] = await reader.read((b) => (b.length >= 2 ? 2 : -1));
    if (ok !== 0) throw new Error("SOCKS5 proxy refused the user name and password");
  } else if (method !== 0) {
    throw new Error("SOCKS5 proxy accepts none of the offered authentication methods");
  }
  let address: number[];
  if (/^\d+\.\d+\.\d+\.\d+$/.test(host)) address = [1, ...host.split(".").map(Number)];
  else if (host.includes(":")) address = [4, ...ipv6Bytes(host)];
  else {
    const name = enc.encode(host);
    if (name.length > 255) throw new Error(`SOCKS5 cannot carry a host name over 255 bytes: ${host}`);
    address = [3, name.length, ...name];
  }
  socket.write(new Uint8Array([5, 1, 0, ...address, port >> 8, port & 0xff]));
  const reply = await reader.read((b) => {
    if (b.length < 5) return -1;
    const length = b[3] === 1 ? 4 : b[3] === 4 ? 16 : b[3] === 3 ? 1 + b[4] : -1;
    if (length < 0) throw new Error(`SOCKS5 proxy replied with an unknown address type ${b[3]}`);
    return b.length >= 4 + length + 2 ? 4 + length + 2 : -1;
  });
  if (reply[1] !== 0) {
    throw new Error(
      `SOCKS5 proxy could not connect to ${host}:${port}: ${SOCKS_REPLIES[reply[1]] ?? `reply ${reply[1]}`}`,
    );
  }
}

/** The 16 bytes of a valid IPv6 address (checked by the URL parser), an embedded IPv4 part included. */
function ipv6Bytes(host: string): number[] {
  let s = host;
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(s);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number);
    s = `${s.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = s.includes("::") ? s.split("::") : [s, undefined];
  const first = head ? head.split(":") : [];
  const last = tail ? tail.split(":") : [];
  const groups = tail === undefined ? first : [...first, ...Array(8 - first.length - last.length).fill("0"), ...last];
  return groups.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff]);
}

/** Reads a proxy's handshake replies off a node socket, then hands the socket over with nothing consumed past them. */
class SocketReader {
  #buffer = new Uint8Array(0);
  #failure?: Error;
  #wake?: () => void;

  constructor(readonly socket: Socket, readonly peer: string) {
    socket.on("data", this.#onData);
    socket.on("error", this.#onError);
    socket.on("end", this.#onEnd);
  }

  #onData = (chunk: Uint8Array) => {
    const next = new Uint8Array(this.#buffer.length + chunk.length);
    next.set(this.#buffer);
    next.set(chunk, this.#buffer.length);
    this.#buffer = next;
    this.#wake?.();
  };
  #onError = (e: Error) => {
    this.#failure ??= e;
    this.#wake?.();
  };
  #onEnd = () => this.#onError(new Error(`The ${this.peer} closed the connection during the handshake`));

  /** Waits for the socket's connect event (or its failure). */
  async connected(event: "connect" | "secureConnect"): Promise<void> {
    let up = false;
    const onUp = () => {
      up = true;
      this.#wake?.();
    };
    this.socket.once(event, onUp);
    try {
      while (!up) {
        if (this.#failure) throw this.#failure;
        await new Promise<void>((resolve) => (this.#wake = resolve));
        this.#wake = undefined;
      }
    } finally {
      this.socket.off(event, onUp);
    }
  }

  /** Waits until `complete` returns the length of a whole message at the start of the buffer, and takes it. */
  async read(complete: (buffered: Uint8Array) => number): Promise<Uint8Array> {
    for (;;) {
      const n = complete(this.#buffer);
      if (n >= 0) {
        const message = this.#buffer.slice(0, n);
        this.#buffer = this.#buffer.slice(n);
        return message;
      }
      if (this.#failure) throw this.#failure;
      await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = undefined;
    }
  }

  /** Stops reading; bytes that arrived after the last message are put back for the next reader. */
  release(): void {
    this.socket.pause();
    this.socket.off("data", this.#onData);
    this.socket.off("error", this.#onError);
    this.socket.off("end", this.#onEnd);
    if (this.#buffer.length) this.socket.unshift(this.#buffer);
  }
}
