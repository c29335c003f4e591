// The drainguard end of the drain protocol: accepts operator clients on a
// Unix socket, tells them to drain, and reports when all have drained.

import { chmodSync, unlinkSync } from 'node:fs';
import { type Server, type Socket, createServer } from 'node:net';
import { type Logger, silentLogger } from '../log/logger.ts';
import { type ControlChannel, type DrainRequest, controlChannel } from './control.ts';
import { LineSplitter, PROTOCOL_VERSION, ProtocolError, encode, parseClientMessage } from './messages.ts';
import { describe } from '../errors.ts';

/** A client whose unread output grows past this is not reading; it is dropped. */
const MAX_BACKLOG_BYTES = 64 * 1024;

export interface ClientInfo {
  readonly id: number;
  readonly name?: string;
  readonly pid?: number;
  readonly greeted: boolean;
  readonly drained: boolean;
  readonly inflight: number;
}

export type ServerEvent =
  | { type: 'hello'; client: ClientInfo }
  | { type: 'inflight'; client: ClientInfo }
  | { type: 'drained'; client: ClientInfo; afterMs: number }
  | { type: 'disconnect'; client: ClientInfo }
  | { type: 'rejected'; client: ClientInfo; reason: string };

export interface DrainServerOptions {
  readonly path: string;
  readonly logger?: Logger;
  readonly now?: () => number;
  readonly onEvent?: (event: ServerEvent) => void;
  /** Accepts drain requests on control connections; without it they get an `error`. */
  readonly onDrainRequest?: (request: DrainRequest, channel: ControlChannel) => void;
}

interface Client extends ClientInfo {
  socket: Socket;
  /** A control connection: never counted as an operator, never sent `drain`. */
  control?: AbortController;
  greeted: boolean;
  drained: boolean;
  inflight: number;
  name?: string;
  pid?: number;
}

/** How the clients ended their part of a drain. */
export interface DrainTally {
  readonly acknowledged: number;
  readonly disconnected: number;
}

/** A drain under way, as drain() returns it. */
export interface SocketDrain {
  /** How many operator clients were told when it started. */
  readonly told: number;
  /**
   * Calls `onDone` once every client told (or greeted since) has said
   * `drained` or disconnected: in the same turn as the last of them, or at
   * once when none is left.
   */
  whenDone(onDone: (tally: DrainTally) => void): void;
}

interface DrainUnderWay {
  readonly startedAt: number;
  readonly deadline: () => number;
  readonly handle: SocketDrain;
  onDone?: (tally: DrainTally) => void;
  acknowledged: number;
  disconnected: number;
  over: boolean;
}

export class DrainServer {
  readonly path: string;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #onEvent: (event: ServerEvent) => void;
  readonly #onDrainRequest?: (request: DrainRequest, channel: ControlChannel) => void;
  readonly #clients = new Map<number, Client>();
  readonly #controls = new Set<Client>();
  /** Rejected connections, half-closed until the peer closes (or a timeout): cut at close(), so that none holds up drainguard's exit. */
  readonly #rejected = new Set<Socket>();
  #server?: Server;
  #nextId = 1;
  /** Greeted clients that have not said drained: the drain waits for this to reach 0. */
  #undrained = 0;
  #drain?: DrainUnderWay;

  constructor({ path, logger = silentLogger, now = Date.now, onEvent = () => {}, onDrainRequest }: DrainServerOptions) {
    this.path = path;
    this.#logger = logger;
    this.#now = now;
    this.#onEvent = onEvent;
    this.#onDrainRequest = onDrainRequest;
  }

  /** Listens on the path (which must be free) with mode 0600: only the owner may connect. */
  async listen(): Promise<void> {
    const server = createServer({ allowHalfOpen: false }, (socket) => this.#accept(socket));
    const previous = process.umask(0o177);
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        // A deep backlog: a thousand operator clients (or preStop hooks) may connect at the same moment.
        server.listen({ path: this.path, backlog: 4096 }, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } finally {
      process.umask(previous);
    }
    chmodSync(this.path, 0o600);
    // Running out of descriptors under a connection flood must not bring drainguard down.
    server.on('error', (err) => this.#logger.warn('drain socket error', { error: err }));
    this.#server = server;
  }

  /** How many operator clients have said hello, counted in place. */
  greetedCount(): number {
    let n = 0;
    for (const c of this.#clients.values()) if (c.greeted) n++;
    return n;
  }

  clients(): ClientInfo[] {
    return [...this.#clients.values()].map(publicInfo);
  }

  /**
   * Sends `drain` to every greeted client (and to any that greets later). A
   * drain is for good: a later call returns the one under way. The deadline is
   * the caller's (read again for each client that greets later), announced here
   * and enforced there.
   */
  drain(deadline: number | (() => number)): SocketDrain {
    if (this.#drain) return this.#drain.handle;
    const now = this.#now();
    const deadlineAt = typeof deadline === 'number' ? () => deadline : deadline;
    const line = drainLine(deadlineAt(), now);
    let told = 0;
    for (const client of this.#clients.values()) {
      if (!client.greeted) continue;
      this.#write(client, line);
      told++;
    }
    const whenDone = (onDone: (tally: DrainTally) => void): void => {
      drain.onDone = onDone;
      this.#checkDrained();
    };
    const drain: DrainUnderWay = { startedAt: now, deadline: deadlineAt, handle: { told, whenDone }, acknowledged: 0, disconnected: 0, over: false };
    this.#drain = drain;
    return drain.handle;
  }

  /** Stops accepting, closes every connection and removes the socket file. */
  async close(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    for (const client of this.#clients.values()) client.socket.destroy();
    for (const socket of this.#rejected) socket.destroy();
    // A requester may still be reading its last answer: end gently, then cut.
    for (const control of this.#controls) {
      control.socket.end();
      setTimeout(() => control.socket.destroy(), 1000).unref();
    }
    if (!server) return;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    try {
      unlinkSync(this.path);
    } catch {
      // Already gone (Node removes it on close on some platforms).
    }
  }

  #accept(socket: Socket): void {
    const client: Client = { id: this.#nextId++, socket, greeted: false, drained: false, inflight: 0 };
    this.#clients.set(client.id, client);
    const splitter = new LineSplitter();
    const read = (chunk: Buffer) => {
      try {
        splitter.push(chunk, (line) => {
          if (!socket.destroyed) this.#handle(client, line);
        });
      } catch (err) {
        if (!(err instanceof ProtocolError)) throw err;
        this.#reject(client, describe(err));
      }
    };
    socket.on('data', read);
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.#gone(client));
  }

  /** A connection closed: a client that had not said drained may have been the last one the drain waited for. */
  #gone(client: Client): void {
    if (client.control) {
      this.#controls.delete(client);
      client.control.abort();
      return;
    }
    this.#clients.delete(client.id);
    if (client.greeted && !client.drained) {
      this.#undrained--;
      if (this.#drain) this.#drain.disconnected++;
    }
    if (client.greeted) {
      this.#logger.debug('client disconnected', { client: client.id, name: client.name });
      this.#onEvent({ type: 'disconnect', client: publicInfo(client) });
    }
    this.#checkDrained();
  }

  #handle(client: Client, line: string): void {
    // A control connection says one thing; whatever follows is ignored.
    if (client.control) return;
    const message = parseClientMessage(line);
    if (!client.greeted) {
      if (message.type === 'request-drain') return this.#control(client, message.protocol, { source: message.source });
      if (message.type !== 'hello') throw new ProtocolError('DG_PROTOCOL_HELLO_FIRST', 'the first message must be hello');
      if (message.protocol !== PROTOCOL_VERSION) {
        throw new ProtocolError('DG_PROTOCOL_VERSION', `unsupported protocol version ${message.protocol}; this drainguard speaks ${PROTOCOL_VERSION}`);
      }
      client.greeted = true;
      this.#undrained++;
      client.name = message.name;
      client.pid = message.pid;
      this.#send(client, { type: 'welcome', protocol: PROTOCOL_VERSION });
      this.#logger.debug('client connected', { client: client.id, name: client.name, pid: client.pid });
      this.#onEvent({ type: 'hello', client: publicInfo(client) });
      if (this.#drain) this.#sendDrain(client);
      return;
    }
    switch (message.type) {
      case 'inflight':
        client.inflight = message.count;
        this.#onEvent({ type: 'inflight', client: publicInfo(client) });
        return;
      case 'drained': {
        if (client.drained) return;
        client.drained = true;
        this.#undrained--;
        const afterMs = this.#drain ? this.#now() - this.#drain.startedAt : 0;
        if (this.#drain) {
          this.#drain.acknowledged++;
          this.#logger.info('client drained', { client: client.id, name: client.name, afterMs });
        }
        this.#onEvent({ type: 'drained', client: publicInfo(client), afterMs });
        this.#checkDrained();
        return;
      }
      default:
        // A repeated hello or a message type from a later protocol version: ignored.
        return;
    }
  }

  /** Turns the connection into a control connection and hands the request over. */
  #control(client: Client, protocol: number, request: DrainRequest): void {
    if (protocol !== PROTOCOL_VERSION) {
      throw new ProtocolError('DG_PROTOCOL_VERSION', `unsupported protocol version ${protocol}; this drainguard speaks ${PROTOCOL_VERSION}`);
    }
    if (!this.#onDrainRequest) throw new ProtocolError('DG_PROTOCOL_DRAIN_REFUSED', 'drain requests are not accepted here: drainguard run drains on SIGTERM; prestop is for drainguard sidecar');
    this.#clients.delete(client.id);
    client.control = new AbortController();
    this.#controls.add(client);
    this.#onDrainRequest(request, controlChannel(client.socket, client.control.signal));
  }

  #sendDrain(client: Client): void {
    this.#write(client, drainLine(this.#drain!.deadline(), this.#now()));
  }

  #send(client: Client, message: object): void {
    this.#write(client, encode(message));
  }

  #write(client: Client, line: string): void {
    if (client.socket.destroyed) return;
    client.socket.write(line);
    if (client.socket.writableLength > MAX_BACKLOG_BYTES) {
      this.#logger.warn('dropping a client that does not read', { client: client.id, name: client.name });
      client.socket.destroy();
    }
  }

  #reject(client: Client, reason: string): void {
    this.#logger.warn('protocol error, closing the connection', { client: client.id, name: client.name, reason });
    this.#onEvent({ type: 'rejected', client: publicInfo(client), reason });
    this.#clients.delete(client.id);
    if (client.greeted && !client.drained) {
      this.#undrained--;
      if (this.#drain) this.#drain.disconnected++;
    }
    client.greeted = false;
    this.#checkDrained();
    client.socket.end(encode({ type: 'error', message: reason }));
    client.socket.removeAllListeners('data');
    // A peer that never reads must not keep the half-closed socket alive.
    client.socket.setTimeout(1000, () => client.socket.destroy());
    this.#rejected.add(client.socket);
    client.socket.once('close', () => this.#rejected.delete(client.socket));
  }

  #checkDrained(): void {
    const drain = this.#drain;
    if (!drain || drain.over || this.#undrained > 0) return;
    drain.over = true;
    const tally = { acknowledged: drain.acknowledged, disconnected: drain.disconnected };
    drain.onDone?.(tally);
  }
}

function drainLine(deadline: number, now: number): string {
  return encode({ type: 'drain', deadline: new Date(deadline).toISOString(), remainingMs: Math.max(0, Math.round(deadline - now)) });
}

function publicInfo(c: Client): ClientInfo {
  return { id: c.id, name: c.name, pid: c.pid, greeted: c.greeted, drained: c.drained, inflight: c.inflight };
}
