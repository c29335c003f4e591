// A STAND-IN for controller-runtime's metrics endpoint, for the tests that
// must run where controller-runtime cannot be built (no Go module proxy): an
// HTTP server on loopback that serves the one series drainguard reads,
// controller_runtime_active_workers, as controller-runtime v0.20 exposes it,
// and that a test can make busy, idle, failing or silent. It is held to the
// real endpoint by the contract test in idle-metrics.test.ts ("the stand-in
// ..."), which runs where the real manager can be built.

import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { Socket } from 'node:net';
import { EventEmitter } from 'node:events';

/** What the stand-in answers; changed by the test between scrapes. */
export type Answer = { readonly active: number } | { readonly status: number } | { readonly body: string } | 'silent';

export interface Scrape {
  readonly n: number;
  readonly at: number;
  readonly accept?: string;
  readonly answer: Answer;
}

/** controller-runtime's content type for the text format (client_golang's promhttp). */
export const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** The exposition of the series as controller-runtime writes it (pkg/internal/controller/metrics). */
export function exposition(controller: string, active: number): string {
  return [
    '# HELP controller_runtime_active_workers Number of currently used workers per controller',
    '# TYPE controller_runtime_active_workers gauge',
    `controller_runtime_active_workers{controller="${controller}"} ${active}`,
    '',
  ].join('\n');
}

export class MetricsStandIn {
  readonly scrapes: Scrape[] = [];
  /** Answers in turn, one per scrape; the last is kept for the scrapes after it. */
  #answers: Answer[];
  readonly #controller: string;
  readonly #events = new EventEmitter();
  readonly #sockets = new Set<Socket>();
  #server?: Server;
  port = 0;

  constructor(answers: Answer[], controller = 'example') {
    this.#answers = answers;
    this.#controller = controller;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/metrics`;
  }

  /** Listens on 127.0.0.1, on `port` or a free one. */
  async listen(port = 0): Promise<this> {
    const server = createServer((req, res) => this.#serve(req, res));
    server.on('connection', (s) => {
      this.#sockets.add(s);
      s.on('close', () => this.#sockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', () => resolve()));
    this.#server = server;
    this.port = (server.address() as { port: number }).port;
    return this;
  }

  /** From the next scrape on, these answers in turn. */
  answer(...answers: Answer[]): void {
    this.#answers = answers;
  }

  /** Resolves once `n` scrapes have arrived. */
  scraped(n: number): Promise<Scrape[]> {
    return new Promise((resolve) => {
      const check = () => {
        if (this.scrapes.length < n) return;
        this.#events.off('scrape', check);
        resolve(this.scrapes);
      };
      this.#events.on('scrape', check);
      check();
    });
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise((resolve) => (this.#server ? this.#server.close(resolve) : resolve(undefined)));
  }

  #serve(req: IncomingMessage, res: ServerResponse): void {
    const answer = this.#answers.length > 1 ? this.#answers.shift()! : this.#answers[0]!;
    this.scrapes.push({ n: this.scrapes.length + 1, at: Date.now(), accept: req.headers.accept, answer });
    this.#events.emit('scrape');
    if (answer === 'silent') return; // accepted, never answered
    if ('status' in answer) {
      res.writeHead(answer.status, { 'content-type': 'text/plain; charset=utf-8' }).end(`${answer.status}\n`);
      return;
    }
    res.writeHead(200, { 'content-type': CONTENT_TYPE }).end('body' in answer ? answer.body : exposition(this.#controller, answer.active));
  }
}
