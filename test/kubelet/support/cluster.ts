// TEMPORARY until the cluster branch lands: a hand-started control plane
// named by KUBELET_DEV_CLUSTER (a directory with ca.crt, admin.crt, admin.key, url).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Api } from '../../support/kubelet/api.ts';
import type { ClusterAccess } from '../../support/kubelet/index.ts';

export interface KubeletCluster {
  readonly access: ClusterAccess;
  readonly api: Api;
  readonly adminKubeconfig: string;
  namespace(prefix: string): Promise<string>;
  /** Polls GET `path` every 100 ms until `ok` holds, for at most `ms`; resolves with the body. */
  poll(path: string, ok: (body: any, status: number) => boolean, ms: number, what: string): Promise<any>;
  /** `kubectl ARGS` as the admin, `input` on stdin; resolves with stdout. */
  kubectl(args: readonly string[], input?: string): string;
  close(): Promise<void>;
}

export async function kubeletCluster(): Promise<KubeletCluster> {
  const dir = process.env.KUBELET_DEV_CLUSTER!;
  const access = { server: readFileSync(join(dir, 'url'), 'utf8').trim(), ca: readFileSync(join(dir, 'ca.crt'), 'utf8'), cert: readFileSync(join(dir, 'admin.crt'), 'utf8'), key: readFileSync(join(dir, 'admin.key'), 'utf8') };
  const api = new Api(access);
  const made: string[] = [];
  return {
    access,
    api,
    adminKubeconfig: join(dir, 'admin.kubeconfig'),
    async namespace(prefix) {
      const name = `${prefix}-${randomBytes(4).toString('hex')}`;
      await api.must('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
      made.push(name);
      for (let i = 0; i < 100; i++) {
        if ((await api.call('GET', `/api/v1/namespaces/${name}/serviceaccounts/default`)).status === 200) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      return name;
    },
    async poll(path, ok, ms, what) {
      const deadline = Date.now() + ms;
      let last: { status: number; body: any } | undefined;
      while (Date.now() < deadline) {
        last = await api.call('GET', path);
        if (ok(last.body, last.status)) return last.body;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`timed out after ${ms} ms waiting for ${what}; last: ${last?.status} ${JSON.stringify(last?.body).slice(0, 2000)}`);
    },
    kubectl(args, input) {
      return execFileSync('kubectl', ['--kubeconfig', join(dir, 'admin.kubeconfig'), ...args], { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
    },
    async close() {
      for (const ns of made) await api.call('DELETE', `/api/v1/namespaces/${ns}`);
    },
  };
}
