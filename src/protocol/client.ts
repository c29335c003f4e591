// The operator's end of the drain protocol, for operators written in
// TypeScript or JavaScript:
//
//   const guard = connectDrainguard({ name: 'my-operator' });
//   while (!guard.draining.aborted) {
//     const item = await queue.next(guard.draining);
//     void guard.track((deadline) => reconcile(item, deadline));
//   }
//
// `draining` fires when the drain starts (stop taking work); `deadline` when
// the drain deadline passes (abandon what is left). With automatic drained
// (the default) `drained` is sent once the drain has started and the last
// tracked unit of work has ended. Without DRAINGUARD_SOCKET it does nothing.

import { type Socket, connect } from 'node:net';
import { LineSplitter, PROTOCOL_VERSION, encode, parseServerMessage } from './messages.ts';

export interface DrainClientOptions {
  /** Defaults to DRAINGUARD_SOCKET; without either the client is a no-op. */
  readonly socketPath?: string;
  /** Free text shown in drainguard's logs. */
  readonly name?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Send `drained` by itself when the drain has started and no tracked work is left. Default true. */
  readonly autoDrained?: boolean;
  /** Reconnect backoff while the socket is not there yet: first and longest delay. */
  readonly reconnectDelayMs?: readonly [number, number];
  /** Connection errors and `error` messages from drainguard; the client keeps reconnecting. */
  readonly onError?: (error: Error) => void;
}

export class DrainClient {
  /** False when there is no socket to connect to: then nothing is ever sent and no signal fires. */
  readonly enabled: boolean;
  readonly #path?: string;
  readonly #name: string;
  readonly #auto: boolean;
  readonly #delays: readonly [number, number];
  readonly #onError: (error: Error) => void;
  readonly #draining = new AbortController();
  readonly #deadline = new AbortController();
  #socket?: Socket;
  #connected = false;
  #closed = false;
  #delay: number;
  #inflight = 0;
  #drainedSent = false;
  #deadlineAt?: Date;
  #deadlineTimer?: NodeJS.Timeout;
  #retryTimer?: NodeJS.Timeout;
  #welcomed = false;
  #keepAlive?: NodeJS.Timeout;
  #onReady!: () => void;
  #onDrainedWritten!: () => void;
  readonly #drainedWritten = new Promise<void>((r) => (this.#onDrainedWritten = r));
  readonly #ready = new Promise<void>((r) => (this.#onReady = r));

  constructor(options: DrainClientOptions = {}) {
    const env = options.env ?? process.env;
    this.#path = options.socketPath ?? (env.DRAINGUARD_SOCKET || undefined);
    this.enabled = this.#path !== undefined;
    this.#name = options.name ?? `pid ${process.pid}`;
    this.#auto = options.autoDrained ?? true;
    this.#delays = options.reconnectDelayMs ?? [50, 1000];
    this.#delay = this.#delays[0];
    this.#onError = options.onError ?? (() => {});
    if (this.enabled) this.#connect();
    else this.#onReady();
  }

  /** Fires when drainguard starts the drain: take no new work. */
  get draining(): AbortSignal {
    return this.#draining.signal;
  }

  /** Fires when the drain deadline passes: the stop signal is coming, abandon what is left. */
  get deadline(): AbortSignal {
    return this.#deadline.signal;
  }

  /** The drain deadline, once a drain has started. */
  get deadlineAt(): Date | undefined {
    return this.#deadlineAt;
  }

  get inflight(): number {
    return this.#inflight;
  }

  /**
   * Resolves once drainguard has welcomed this client (at once when disabled).
   * While someone waits here the process stays alive; otherwise the client
   * never keeps it alive by itself.
   */
  ready(): Promise<void> {
    if (!this.#welcomed && !this.#keepAlive) {
      this.#keepAlive = setInterval(() => {}, 1 << 30);
      void this.#ready.then(() => clearInterval(this.#keepAlive));
    }
    return this.#ready;
  }

  /** Counts one unit of work in flight; call the returned function (once) when it ends. */
  begin(): () => void {
    this.#setInflight(this.#inflight + 1);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#setInflight(this.#inflight - 1);
    };
  }

  /** Like begin(), but refuses (returns undefined) once the drain has started, so nothing slips in after `drained`. */
  tryBegin(): (() => void) | undefined {
    return this.#draining.signal.aborted ? undefined : this.begin();
  }

  /** Resolves when `drained` has been written to drainguard. */
  drainedSent(): Promise<void> {
    return this.#drainedWritten;
  }

  /** Runs `work` as one tracked unit; it gets the deadline signal to abandon work at the deadline. */
  async track<T>(work: (deadline: AbortSignal) => Promise<T> | T): Promise<T> {
    const end = this.begin();
    try {
      return await work(this.#deadline.signal);
    } finally {
      end();
    }
  }

  /** Reports the operator's own count of work in flight (instead of begin/track). */
  reportInflight(count: number): void {
    if (!Number.isSafeInteger(count) || count < 0) throw new RangeError(`inflight count must be a non-negative integer, got ${count}`);
    this.#setInflight(count);
  }

  /** Says intake has stopped and in-flight work is finished. Sent once. */
  drained(): void {
    if (this.#drainedSent || !this.enabled) return;
    this.#drainedSent = true;
    if (this.#write({ type: 'drained' })) this.#onDrainedWritten();
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#retryTimer);
    clearTimeout(this.#deadlineTimer);
    clearInterval(this.#keepAlive);
    this.#socket?.destroy();
  }

  #setInflight(count: number): void {
    this.#inflight = count;
    this.#write({ type: 'inflight', count });
    this.#maybeDrained();
  }

  #maybeDrained(): void {
    if (this.#auto && this.#draining.signal.aborted && this.#inflight === 0) this.drained();
  }

  /** Writes when connected; otherwise the state is sent on (re)connect. */
  #write(message: object): boolean {
    if (!this.#connected) return false;
    this.#socket!.write(encode(message));
    return true;
  }

  #connect(): void {
    if (this.#closed) return;
    const socket = connect(this.#path!);
    this.#socket = socket;
    socket.unref();
    const splitter = new LineSplitter();
    socket.on('connect', () => {
      this.#connected = true;
      this.#delay = this.#delays[0];
      socket.write(encode({ type: 'hello', protocol: PROTOCOL_VERSION, name: this.#name, pid: process.pid }));
      // After a reconnect, drainguard learns the state it missed.
      if (this.#inflight > 0) socket.write(encode({ type: 'inflight', count: this.#inflight }));
      if (this.#drainedSent) {
        socket.write(encode({ type: 'drained' }));
        this.#onDrainedWritten();
      }
    });
    socket.on('data', (chunk: Buffer) => {
      try {
        splitter.push(chunk, (line) => this.#handle(line));
      } catch (err) {
        this.#onError(err as Error);
        socket.destroy();
      }
    });
    socket.on('error', (err) => this.#onError(err));
    socket.on('close', () => {
      this.#connected = false;
      if (this.#closed) return;
      this.#retryTimer = setTimeout(() => this.#connect(), this.#delay).unref();
      this.#delay = Math.min(this.#delay * 2, this.#delays[1]);
    });
  }

  #handle(line: string): void {
    const message = parseServerMessage(line);
    switch (message.type) {
      case 'welcome':
        this.#welcomed = true;
        this.#onReady();
        return;
      case 'drain':
        this.#startDrain(new Date(message.deadline), message.remainingMs);
        return;
      case 'error':
        this.#onError(new Error(`drainguard: ${message.message}`));
        return;
    }
  }

  #startDrain(deadline: Date, remainingMs: number): void {
    if (this.#draining.signal.aborted) return;
    // remainingMs is immune to clock skew between the containers; the date is for humans.
    this.#deadlineAt = Number.isNaN(deadline.getTime()) ? new Date(Date.now() + remainingMs) : deadline;
    this.#deadlineTimer = setTimeout(() => this.#deadline.abort(new Error('drain deadline passed')), Math.max(0, remainingMs)).unref();
    this.#draining.abort(new Error('drain started'));
    this.#maybeDrained();
  }
}

export function connectDrainguard(options?: DrainClientOptions): DrainClient {
  return new DrainClient(options);
}
