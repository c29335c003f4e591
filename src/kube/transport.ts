// HTTP(S) to the API server on Node's own http/https: one keep-alive pool per
// client certificate (an exec plugin may rotate it), the cluster's CA and
// server name, and the kubeconfig's proxy-url, else the HTTPS_PROXY /
// NO_PROXY of the environment, as kubectl goes through them.

import * as http from 'node:http';
import * as https from 'node:https';
import type { Credential } from './credentials.ts';

export interface TransportOptions {
  readonly server: string;
  /** PEM of the CA bundle; none: the system's roots. */
  readonly ca?: string;
  readonly insecureSkipTlsVerify?: boolean;
  readonly tlsServerName?: string;
  readonly proxyUrl?: string;
  /** The environment whose HTTPS_PROXY, HTTP_PROXY and NO_PROXY apply when there is no proxy-url. */
  readonly env?: NodeJS.ProcessEnv;
}

export interface HttpResponse {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly text: string;
}

export interface HttpRequest {
  readonly method: string;
  readonly url: URL;
  readonly headers: Readonly<Record<string, string | string[]>>;
  readonly body?: string;
  readonly signal: AbortSignal;
  readonly credential: Credential;
  /** A watch: the body of a 2xx answer goes here chunk by chunk as it comes (text is then empty). */
  readonly onData?: (chunk: string) => void;
}

export class Transport {
  readonly #options: TransportOptions;
  readonly #secure: boolean;
  /** By client certificate: a rotated one (an exec plugin's) gets a pool of its own, the old one is closed. */
  #agent?: { readonly cert?: string; readonly agent: http.Agent };

  constructor(options: TransportOptions) {
    this.#options = options;
    this.#secure = new URL(options.server).protocol === 'https:';
  }

  send(req: HttpRequest): Promise<HttpResponse> {
    const agent = this.#agentFor(req.credential);
    const lib = this.#secure ? https : http;
    const headers: Record<string, string | string[] | number> = { ...req.headers, ...req.credential.headers };
    if (req.body !== undefined) headers['content-length'] = Buffer.byteLength(req.body);
    return new Promise((resolve, reject) => {
      const r = lib.request(req.url, { method: req.method, headers, agent, signal: req.signal }, (res) => {
        const chunks: Buffer[] = [];
        const status = res.statusCode ?? 0;
        const onData = status >= 200 && status < 300 ? req.onData : undefined;
        if (onData) res.setEncoding('utf8');
        res.on('data', (c: Buffer | string) => (onData ? onData(c as string) : chunks.push(c as Buffer)));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      r.on('error', reject);
      r.end(req.body);
    });
  }

  #agentFor(credential: Credential): http.Agent {
    if (this.#agent && this.#agent.cert === credential.cert) return this.#agent.agent;
    this.#agent?.agent.destroy();
    const o = this.#options;
    const proxyEnv = o.proxyUrl ? { HTTPS_PROXY: o.proxyUrl, HTTP_PROXY: o.proxyUrl } : proxyVariables(o.env ?? {});
    const common = { keepAlive: true, ...(proxyEnv && { proxyEnv }) };
    const agent = this.#secure
      ? new https.Agent({
          ...common,
          ca: o.ca,
          cert: credential.cert,
          key: credential.key,
          rejectUnauthorized: !o.insecureSkipTlsVerify,
          servername: o.tlsServerName,
        })
      : new http.Agent(common);
    this.#agent = { cert: credential.cert, agent };
    return agent;
  }
}

const PROXY_VARIABLES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'NO_PROXY', 'no_proxy'];

/** The proxy variables that are set, or undefined: Node's agent then connects directly. */
function proxyVariables(env: NodeJS.ProcessEnv): Record<string, string> | undefined {
  const set = PROXY_VARIABLES.filter((k) => env[k]);
  return set.length > 0 ? Object.fromEntries(set.map((k) => [k, env[k]!])) : undefined;
}
