// A bare protocol peer for tests: writes what it is told, collects the lines it gets.
import { type Socket, connect } from 'node:net';
import { once } from 'node:events';
import { until } from './wait.ts';

export class RawClient {
  readonly socket: Socket;
  readonly lines: string[] = [];
  closed = false;
  #partial = '';
  #checks = new Set<() => void>();

  constructor(path: string) {
    this.socket = connect(path);
    this.socket.setEncoding('utf8');
    this.socket.on('data', (chunk: string) => {
      const parts = (this.#partial + chunk).split('\n');
      this.#partial = parts.pop()!;
      this.lines.push(...parts);
      this.#notify();
    });
    this.socket.on('error', () => {});
    this.socket.on('close', () => {
      this.closed = true;
      this.#notify();
    });
  }

  async connected(): Promise<this> {
    if (!this.socket.connecting) return this;
    await once(this.socket, 'connect');
    return this;
  }

  send(data: string | Buffer | object): void {
    this.socket.write(typeof data === 'object' && !Buffer.isBuffer(data) ? `${JSON.stringify(data)}\n` : data);
  }

  messages(): Record<string, unknown>[] {
    return this.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  /** Waits for a message of this type; resolves with it. */
  message(type: string, ms = 5000): Promise<Record<string, unknown>> {
    return this.#until(() => this.messages().find((m) => m.type === type), ms, `a "${type}" message`);
  }

  /** Waits until the other side closed the connection. */
  close(ms = 5000): Promise<true> {
    return this.#until(() => (this.closed ? true : undefined), ms, 'the connection to close');
  }

  #until<T>(predicate: () => T | undefined, ms: number, what: string): Promise<T> {
    return until(
      (check) => {
        this.#checks.add(check);
        return () => this.#checks.delete(check);
      },
      predicate,
      ms,
      what,
    );
  }

  #notify(): void {
    for (const check of [...this.#checks]) check();
  }
}
