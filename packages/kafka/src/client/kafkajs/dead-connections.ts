import net from 'node:net';
import tls from 'node:tls';
import type { ISocketFactory } from 'kafkajs';

/** kafkajs's own keep-alive delay for its sockets. */
const KEEP_ALIVE_DELAY_MS = 60_000;

/**
 * The sockets of one kafkajs client, by broker, so that a connection a request timed out on
 * can be closed. kafkajs leaves such a connection open and sends the next requests on it;
 * after a network partition heals, TCP's retransmission backoff (doubling while packets were
 * dropped) can hold that connection silent for many more seconds. Closing it, as Kafka's Java
 * client does on a request timeout, makes kafkajs open a fresh one, which works as soon as
 * the network does.
 */
export interface ConnectionRegistry {
  /** kafkajs's default socket factory (TCP, or TLS when `ssl` is set), recording each socket. */
  readonly socketFactory: ISocketFactory;
  /**
   * Destroys every open socket to `broker` (`host:port`, as kafkajs names it); kafkajs rejects
   * the requests in flight on them as connection errors and reconnects. Returns how many.
   */
  closeBroker(broker: string): number;
}

/** Creates a {@link ConnectionRegistry} for one client. */
export function createConnectionRegistry(): ConnectionRegistry {
  const byBroker = new Map<string, Set<net.Socket>>();
  const socketFactory: ISocketFactory = ({ host, port, ssl, onConnect }) => {
    const socket = ssl
      ? tls.connect(
          { host, port, ...(net.isIP(host) === 0 ? { servername: host } : {}), ...ssl },
          onConnect,
        )
      : net.connect({ host, port }, onConnect);
    socket.setKeepAlive(true, KEEP_ALIVE_DELAY_MS);
    const broker = `${host}:${port}`;
    const sockets = byBroker.get(broker) ?? new Set<net.Socket>();
    byBroker.set(broker, sockets);
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    return socket;
  };
  return {
    socketFactory,
    closeBroker(broker) {
      const sockets = [...(byBroker.get(broker) ?? [])];
      for (const socket of sockets) {
        // With an error, not a plain close: kafkajs listens for `error`, not `close`.
        socket.destroy(
          new Error(`a request to ${broker} timed out; the connection is presumed dead`),
        );
      }
      return sockets.length;
    },
  };
}
