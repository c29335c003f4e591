// The drainguard end of the drain protocol: accepts operator clients on a
// Unix socket, tells them to drain, and reports each one's answer. What the
// answers mean (when the drain is over, and how it ended) is the drain's
// (supervisor/drain.ts).

import { chmodSync, unlinkSync } from 'node:fs';
import { type Server, type Socket, createServer } from 'node:net';
import { type Clock, systemClock } from '../clock.ts';
import { type Logger, silentLogger } from '../log/logger.ts';
import { boundedWarn } from './bounded-log.ts';
import { type ControlChannel, type DrainRequest, controlChannel } from './control.ts';
import { LineSplitter, PROTOCOL_VERSION, ProtocolError, encode, parseClientMessage } from './messages.ts';
import { describe } from '../errors.ts';

/** A client whose unread output grows past this is not reading; it is dropped. */
const MAX_BACKLOG_BYTES = 64 * 1024;
/** How long a connection closed with an `error` may linger for the peer to read it. */
const LINGER_MS = 1000;

/**
 * What the socket takes in at once (docs/protocol.md, "Bounds"). Each
 * connection holds at most one partial line of 64 KiB; a connection past a
 * cap gets `error` and is closed. A thousand operator clients fit; a peer
 * that opens connections and says nothing (or half a line) holds at most
 * maxUngreeted of them, each for helloTimeoutMs.
 */
export interface IntakeLimits {
  /** Connections of every kind at once: operator clients, drain requests, and those yet to say hello. */
  readonly maxConnections: number;
  /** Connections that have not said hello (nor asked for a drain) yet. */
  readonly maxUngreeted: number;
  /** A connection that has not said hello (nor asked for a drain) in this long gets `error` and is closed. */
  readonly helloTimeoutMs: number;
}

export const INTAKE_LIMITS: IntakeLimits = { maxConnections: 1024, maxUngreeted: 128, helloTimeoutMs: 10_000 };

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
  | { type: 'drained'; client: ClientInfo }
  | { type: 'disconnect'; client: ClientInfo }
  | { type: 'rejected'; client: ClientInfo; reason: string };

export interface DrainServerOptions {
  readonly path: string;
  readonly logger?: Logger;
  /** What the deadline told a late client is counted on (the stop procedure's clock); the wall clock by default. */
  readonly clock?: Pick<Clock, 'now'>;
  readonly onEvent?: (event: ServerEvent) => void;
  /** Accepts drain requests on control connections; without it they get an `error`. */
  readonly onDrainRequest?: (request: DrainRequest, channel: ControlChannel) => void;
  readonly limits?: IntakeLimits;
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
  /** Until hello (or a drain request): the connection is closed when it fires. */
  helloTimer?: NodeJS.Timeout;
}

/** What the drain (supervisor/drain.ts) gives the server to tell the clients, and hears back. */
export interface DrainListener {
  /** The deadline to tell a client, read as it is told (a client that greets during the drain gets the one in force then). */
  deadline(): number;
  /**
   * A greeted client answered the drain: it said `drained`, or went away without
   * saying it (`gone`). `undrained`: the greeted clients yet to say drained, this
   * one counted out: in the same turn as the last answer, it is 0.
   */
  onAnswer(answer: 'drained' | 'gone', client: ClientInfo, undrained: number): void;
}

export class DrainServer {
  readonly path: string;
  readonly #logger: Logger;
  readonly #clock: Pick<Clock, 'now'>;
  readonly #onEvent: (event: ServerEvent) => void;
  readonly #onDrainRequest?: (request: DrainRequest, channel: ControlChannel) => void;
  readonly #clients = new Map<number, Client>();
  readonly #controls = new Set<Client>();
  /** Connections that have not said hello nor asked for a drain: capped, and each given helloTimeoutMs. */
  readonly #ungreeted = new Set<Client>();
  /** Rejected connections, half-closed until the peer closes (or LINGER_MS): cut at close(), so that none holds up drainguard's exit. */
  readonly #rejected = new Set<Socket>();
  readonly #limits: IntakeLimits;
  /** Peers cause these at will: logged at a bounded rate. */
  readonly #logRefused: (fields: Record<string, unknown>) => void;
  readonly #logRejected: (fields: Record<string, unknown>) => void;
  #server?: Server;
  #nextId = 1;
  /** Once the clients were told to drain. */
  #drain?: DrainListener;

  constructor({
    path,
    logger = silentLogger,
    clock = systemClock,
    onEvent = () => {},
    onDrainRequest,
    limits = INTAKE_LIMITS,
  }: DrainServerOptions) {
    this.path = path;
    this.#logger = logger;
    this.#clock = clock;
    this.#onEvent = onEvent;
    this.#onDrainRequest = onDrainRequest;
    this.#limits = limits;
    this.#logRefused = boundedWarn(logger, 'drain socket connection refused', { clock });
    this.#logRejected = boundedWarn(logger, 'protocol error, closing the connection', { clock });
  }

  /** Listens on the path (which must be free) with mode 0600: only the owner may connect. */
  async listen(): Promise<void> {
    // Paused: nothing is read from a connection before it is taken in (a refused one is never read).
    const server = createServer({ allowHalfOpen: false, pauseOnConnect: true }, (socket) => this.#accept(socket));
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
    return this.#count((c) => c.greeted);
  }

  clients(): ClientInfo[] {
    return [...this.#clients.values()].map(publicInfo);
  }

  /** Greeted clients that have not said drained, counted in place. */
  undrained(): number {
    return this.#count((c) => c.greeted && !c.drained);
  }

  #count(which: (client: Client) => boolean): number {
    let n = 0;
    for (const c of this.#clients.values()) if (which(c)) n++;
    return n;
  }

  /**
   * Sends `drain` to every greeted client, and to any that greets later, with
   * the listener's deadline (announced here, enforced there); from now on each
   * greeted client's answer goes to the listener. A drain is for good: a later
   * call tells no one. Returns how many clients were told.
   */
  tellDrain(listener: DrainListener): number {
    if (this.#drain) return 0;
    this.#drain = listener;
    const line = drainLine(listener.deadline(), this.#clock.now());
    let told = 0;
    for (const client of this.#clients.values()) {
      if (!client.greeted) continue;
      this.#write(client, line);
      told++;
    }
    return told;
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
    const refusal = this.#overLimit();
    if (refusal) return this.#refuse(socket, refusal);
    const client: Client = { id: this.#nextId++, socket, greeted: false, drained: false, inflight: 0 };
    this.#clients.set(client.id, client);
    this.#ungreeted.add(client);
    const { helloTimeoutMs } = this.#limits;
    client.helloTimer = setTimeout(
      () => this.#reject(client, describe(new ProtocolError('DG_PROTOCOL_HELLO_TIMEOUT', `no hello within ${helloTimeoutMs} ms`))),
      helloTimeoutMs,
    ).unref();
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
    socket.resume();
  }

  /** Why a new connection cannot be taken in, if it cannot. */
  #overLimit(): string | undefined {
    const { maxConnections, maxUngreeted } = this.#limits;
    if (this.#clients.size + this.#controls.size >= maxConnections) return `too many connections (at most ${maxConnections})`;
    if (this.#ungreeted.size >= maxUngreeted) return `too many connections that have not said hello (at most ${maxUngreeted})`;
    return undefined;
  }

  /**
   * Refuses a connection: `error` and end. Nothing is read from it (what the
   * peer sent stays in the kernel, not in drainguard's memory), so its close
   * goes unseen: it is cut after LINGER_MS. It is not counted against the
   * caps meanwhile: a client that retries sooner would be refused for good.
   */
  #refuse(socket: Socket, reason: string): void {
    const message = describe(new ProtocolError('DG_PROTOCOL_BUSY', reason));
    this.#logRefused({ reason: message, connections: this.#clients.size + this.#controls.size, ungreeted: this.#ungreeted.size });
    socket.on('error', () => socket.destroy());
    this.#linger(socket);
    socket.end(encode({ type: 'error', message }));
  }

  /** Out of the count of connections yet to say hello. */
  #settled(client: Client): void {
    this.#ungreeted.delete(client);
    clearTimeout(client.helloTimer);
  }

  /** A closed connection whose peer has yet to read the `error`: cut after LINGER_MS even if the peer keeps sending. */
  #linger(socket: Socket): void {
    this.#rejected.add(socket);
    const cut = setTimeout(() => socket.destroy(), LINGER_MS).unref();
    socket.once('close', () => {
      clearTimeout(cut);
      this.#rejected.delete(socket);
    });
  }

  /** A connection closed: a client that had not said drained may have been the last one the drain waited for. */
  #gone(client: Client): void {
    this.#settled(client);
    if (client.control) {
      this.#controls.delete(client);
      client.control.abort();
      return;
    }
    this.#clients.delete(client.id);
    const answered = client.greeted && !client.drained;
    if (client.greeted) {
      this.#logger.debug('client disconnected', { client: client.id, name: client.name });
      this.#onEvent({ type: 'disconnect', client: publicInfo(client) });
    }
    if (answered) this.#drain?.onAnswer('gone', publicInfo(client), this.undrained());
  }

  #handle(client: Client, line: string): void {
    // A control connection says one thing; whatever follows is ignored.
    if (client.control) return;
    const message = parseClientMessage(line);
    if (!client.greeted) {
      if (message.type === 'request-drain') return this.#control(client, message.protocol, { source: message.source });
      if (message.type !== 'hello') throw new ProtocolError('DG_PROTOCOL_HELLO_FIRST', 'the first message must be hello');
      if (message.protocol !== PROTOCOL_VERSION) {
        throw new ProtocolError(
          'DG_PROTOCOL_VERSION',
          `unsupported protocol version ${message.protocol}; this drainguard speaks ${PROTOCOL_VERSION}`,
        );
      }
      client.greeted = true;
      this.#settled(client);
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
        this.#onEvent({ type: 'drained', client: publicInfo(client) });
        this.#drain?.onAnswer('drained', publicInfo(client), this.undrained());
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
      throw new ProtocolError(
        'DG_PROTOCOL_VERSION',
        `unsupported protocol version ${protocol}; this drainguard speaks ${PROTOCOL_VERSION}`,
      );
    }
    if (!this.#onDrainRequest)
      throw new ProtocolError(
        'DG_PROTOCOL_DRAIN_REFUSED',
        'drain requests are not accepted here: drainguard run drains on SIGTERM; prestop is for drainguard sidecar',
      );
    this.#clients.delete(client.id);
    this.#settled(client);
    client.control = new AbortController();
    this.#controls.add(client);
    this.#onDrainRequest(request, controlChannel(client.socket, client.control.signal));
  }

  #sendDrain(client: Client): void {
    this.#write(client, drainLine(this.#drain!.deadline(), this.#clock.now()));
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
    this.#logRejected({ client: client.id, name: client.name, reason });
    this.#onEvent({ type: 'rejected', client: publicInfo(client), reason });
    this.#clients.delete(client.id);
    this.#settled(client);
    const answered = client.greeted && !client.drained;
    const info = publicInfo(client);
    client.greeted = false;
    if (answered) this.#drain?.onAnswer('gone', info, this.undrained());
    client.socket.end(encode({ type: 'error', message: reason }));
    client.socket.removeAllListeners('data');
    // Neither a peer that never reads nor one that keeps sending keeps the half-closed socket alive.
    this.#linger(client.socket);
  }
}

function drainLine(deadline: number, now: number): string {
  return encode({ type: 'drain', deadline: new Date(deadline).toISOString(), remainingMs: Math.max(0, Math.round(deadline - now)) });
}

function publicInfo(c: Client): ClientInfo {
  return { id: c.id, name: c.name, pid: c.pid, greeted: c.greeted, drained: c.drained, inflight: c.inflight };
}
