// The kubelet stand-in's way to the API server: the cluster's JSON client
// (test/support/cluster/api.ts) with what the kubelet needs on top: the
// server and CA for the pods' kubeconfigs, and watches that resume.

import { Api as Client, type ApiResponse, type WatchEvent } from '../cluster/api.ts';

export type { WatchEvent } from '../cluster/api.ts';

/** What the kubelet needs of a cluster: where it is, its CA, and admin credentials. */
export interface ClusterAccess {
  readonly server: string;
  readonly ca: string;
  /** A client certificate and key (PEM), or a bearer token. */
  readonly cert?: string | Buffer;
  readonly key?: string | Buffer;
  readonly token?: string;
}

export class Api {
  readonly server: string;
  readonly ca: string;
  readonly #client: Client;

  constructor(access: ClusterAccess) {
    this.server = access.server;
    this.ca = access.ca;
    this.#client = new Client(access.server, access);
  }

  /** Any status is answered; a connection error rejects. */
  call(method: string, path: string, body?: unknown, contentType?: string): Promise<ApiResponse> {
    return this.#client.request(method, path, body, contentType);
  }

  /** Like `call`, but a status outside 2xx is an error naming the request. */
  async must(method: string, path: string, body?: unknown, contentType?: string): Promise<any> {
    const r = await this.call(method, path, body, contentType);
    if (r.status < 200 || r.status > 299) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body?.message ?? r.body)}`);
    return r.body;
  }

  /** A watch from `resourceVersion`; resolves when the server ends it or `signal` aborts. */
  watch(path: string, resourceVersion: string, onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<void> {
    const sep = path.includes('?') ? '&' : '?';
    return new Promise((resolve) => {
      const stop = this.#client.watch(
        `${path}${sep}allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(resourceVersion)}`,
        onEvent,
        () => resolve(),
      );
      signal.addEventListener('abort', () => (stop(), resolve()), { once: true });
    });
  }
}
