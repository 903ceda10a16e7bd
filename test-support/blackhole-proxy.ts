import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy between a client and a server that can play a network partition: in
 * `blackhole` mode it keeps every socket open but holds all bytes in both directions (and
 * any close), which is what a partition looks like to both ends: no error, no answer. `heal`
 * delivers what was held, as TCP's retransmissions would once the network is back, closes
 * connections whose other end closed meanwhile, and forwards again.
 */
export interface BlackholeProxy {
  /** The port the proxy listens on (127.0.0.1). */
  readonly port: number;
  /** `url` (a PostgreSQL URL) pointed at the proxy instead. */
  via(url: string): string;
  /** Stops forwarding bytes, both ways, on every connection, old and new. */
  blackhole(): void;
  /** Forwards again, first delivering what was held. */
  heal(): void;
  /** Connections currently open through the proxy. */
  readonly open: number;
  close(): Promise<void>;
}

interface Side {
  readonly socket: Socket;
  /** Bytes held for this side while the network is down. */
  held: Buffer[];
  /** The other end closed while the network was down: close this side on heal. */
  closeOnHeal: boolean;
}

/** Starts a proxy to `host:port` on a free local port. */
export async function startBlackholeProxy(host: string, port: number): Promise<BlackholeProxy> {
  let down = false;
  const pairs = new Set<[Side, Side]>();

  const pipe = (from: Side, to: Side): void => {
    from.socket.on('data', (chunk: Buffer) => {
      if (down) to.held.push(chunk);
      else if (!to.socket.destroyed) to.socket.write(chunk);
    });
    from.socket.on('close', () => {
      if (down) to.closeOnHeal = true;
      else to.socket.destroy();
    });
    // A reset from either end is a close like any other here.
    from.socket.on('error', () => undefined);
  };

  const server: Server = createServer((downstream) => {
    const upstream = connect(port, host);
    const client: Side = { socket: downstream, held: [], closeOnHeal: false };
    const db: Side = { socket: upstream, held: [], closeOnHeal: false };
    const pair: [Side, Side] = [client, db];
    pairs.add(pair);
    pipe(client, db);
    pipe(db, client);
    downstream.on('close', () => {
      if (upstream.destroyed) pairs.delete(pair);
    });
    upstream.on('close', () => {
      if (downstream.destroyed) pairs.delete(pair);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const local = (server.address() as AddressInfo).port;

  return {
    port: local,
    via: (url) => {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(local);
      return u.toString();
    },
    blackhole: () => {
      down = true;
    },
    heal: () => {
      down = false;
      for (const pair of pairs) {
        for (const side of pair) {
          for (const chunk of side.held.splice(0)) {
            if (!side.socket.destroyed) side.socket.write(chunk);
          }
          if (side.closeOnHeal) side.socket.end();
        }
      }
    },
    get open() {
      return pairs.size;
    },
    close: async () => {
      for (const pair of pairs) for (const side of pair) side.socket.destroy();
      pairs.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
