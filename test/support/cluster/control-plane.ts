// etcd, kube-apiserver and kube-controller-manager as real processes on free
// loopback ports, with a fresh PKI, flags as the measured facts of running a
// control plane say (README.md beside this file).
// Each runs under `setpriv --pdeathsig SIGKILL`, in a process group of its
// own: whatever happens to the process that started them, they die with it.

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Daemon } from '../daemon-process.ts';
import { freePort } from '../free-port.ts';
import { apiserverVersion, findBinaries } from './binaries.ts';
import { type Pki, makePki } from './pki.ts';

/** What a test process needs to reach a control plane (the runner hands it over as a JSON file). */
export interface ControlPlaneState {
  /** The release the API server runs, as it says it (v1.37.2). */
  readonly release: string;
  readonly url: string;
  readonly dir: string;
  readonly caFile: string;
  /** CA key: the fault proxy's certificate is signed with the cluster's CA. */
  readonly caKey: string;
  readonly servingCert: string;
  readonly servingKey: string;
  readonly adminKubeconfig: string;
  readonly adminCert: string;
  readonly adminKey: string;
}

export interface ControlPlane extends ControlPlaneState {
  /** Milliseconds from the start until the API server was ready and the controller-manager working. */
  readonly startMs: number;
  /** Process ids, for measuring and for checks that nothing is left. */
  pids(): number[];
  /** Stops the API server (connections refused) and starts it again on the same port and data. */
  stopApiServer(): Promise<void>;
  startApiServer(): Promise<void>;
  /** Stops the controller-manager (no garbage collector, no namespace controller) until startControllerManager. */
  stopControllerManager(): Promise<void>;
  startControllerManager(): Promise<void>;
  stop(): Promise<void>;
}

const READY_MS = 90_000;

/** A kubeconfig for `url` with a client certificate. */
export function writeKubeconfig(path: string, url: string, ca: string, cert: string, key: string): string {
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: { server: '${url}', certificate-authority: '${ca}' }
users:
- name: test
  user: { client-certificate: '${cert}', client-key: '${key}' }
contexts:
- name: test
  context: { cluster: test, user: test }
current-context: test
`,
    { mode: 0o600 },
  );
  return path;
}

/** GET `path` as the admin; the status, or 0 when the server cannot be reached. */
function adminGet(url: string, path: string, tls: { ca: Buffer; cert: Buffer; key: Buffer }): Promise<number> {
  return new Promise((resolve) => {
    const req = request(`${url}${path}`, { ...tls, timeout: 5000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end();
  });
}

/** Polls until `path` answers 200 (no event exists for it: the server only answers requests). */
async function untilOk(
  url: string,
  path: string,
  tls: { ca: Buffer; cert: Buffer; key: Buffer },
  daemons: Daemon[],
  what: string,
): Promise<void> {
  const deadline = Date.now() + READY_MS;
  while ((await adminGet(url, path, tls)) !== 200) {
    const dead = daemons.find((d) => d.pid === undefined);
    if (dead) throw new Error(`${dead.name} exited while waiting for ${what}:\n${dead.tail()}`);
    if (Date.now() > deadline)
      throw new Error(`timed out after ${READY_MS} ms waiting for ${what}\n${daemons.map((d) => `--- ${d.name}\n${d.tail()}`).join('\n')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface ControlPlaneOptions {
  /** Feature gates for the API server and the controller-manager (an alpha field the API server drops without its gate). */
  readonly featureGates?: Readonly<Record<string, boolean>>;
  /** The API server's --runtime-config: alpha API groups are off without it (lifecycle.k8s.io/v1alpha1=true). */
  readonly runtimeConfig?: string;
  /** The release's binaries (a KUBEBUILDER_ASSETS directory) instead of the run's: a file that needs a newer release. */
  readonly assets?: string;
}

/** --feature-gates=A=true,B=false of `gates`. */
export const featureGatesFlag = (gates: Readonly<Record<string, boolean>>): string =>
  `--feature-gates=${Object.entries(gates)
    .map(([gate, on]) => `${gate}=${on}`)
    .join(',')}`;

export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const gates = options.featureGates ?? {};
  const t0 = Date.now();
  const bin = findBinaries(options.assets ? { ...process.env, KUBEBUILDER_ASSETS: options.assets } : process.env);
  const dir = mkdtempSync(join(tmpdir(), 'drainguard-cluster-'));
  mkdirSync(join(dir, 'pki'));
  const pki = makePki(join(dir, 'pki'));
  const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
  const url = `https://127.0.0.1:${apiPort}`;
  const state = controlPlaneState(apiserverVersion(bin).replace(/^Kubernetes /, ''), url, dir, pki);
  const cmKubeconfig = writeKubeconfig(
    join(dir, 'controller-manager.kubeconfig'),
    url,
    pki.caCert,
    pki.controllerManagerCert,
    pki.controllerManagerKey,
  );
  const tls = { ca: readFileSync(pki.caCert), cert: readFileSync(pki.adminCert), key: readFileSync(pki.adminKey) };
  let stopping = false;

  const etcd = new Daemon(
    'etcd',
    bin.etcd,
    [
      '--data-dir',
      join(dir, 'etcd'),
      '--listen-client-urls',
      `http://127.0.0.1:${etcdPort}`,
      '--advertise-client-urls',
      `http://127.0.0.1:${etcdPort}`,
      '--listen-peer-urls',
      `http://127.0.0.1:${peerPort}`,
      '--initial-advertise-peer-urls',
      `http://127.0.0.1:${peerPort}`,
      '--initial-cluster',
      `default=http://127.0.0.1:${peerPort}`,
      '--log-level',
      'warn',
    ],
    join(dir, 'etcd.log'),
  );
  const apiserver = new Daemon(
    'kube-apiserver',
    bin.apiserver,
    [
      `--etcd-servers=http://127.0.0.1:${etcdPort}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${apiPort}`,
      `--tls-cert-file=${pki.servingCert}`,
      `--tls-private-key-file=${pki.servingKey}`,
      `--client-ca-file=${pki.caCert}`,
      '--authorization-mode=Node,RBAC',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${pki.serviceAccountPub}`,
      `--service-account-signing-key-file=${pki.serviceAccountKey}`,
      '--service-cluster-ip-range=10.0.0.0/24',
      '--advertise-address=127.0.0.1',
      '--endpoint-reconciler-type=none',
      `--cert-dir=${join(dir, 'apiserver-certs')}`,
      ...(Object.keys(gates).length > 0 ? [featureGatesFlag(gates)] : []),
      ...(options.runtimeConfig ? [`--runtime-config=${options.runtimeConfig}`] : []),
    ],
    join(dir, 'kube-apiserver.log'),
  );
  // It exits when the API server goes away: restarted, unless stopped on purpose.
  const restartLater = (d: Daemon) => {
    if (!stopping && cmWanted) setTimeout(() => !stopping && cmWanted && d.pid === undefined && d.start(), 500);
  };
  let cmWanted = true;
  const controllerManager = new Daemon(
    'kube-controller-manager',
    bin.controllerManager,
    [
      `--kubeconfig=${cmKubeconfig}`,
      `--authentication-kubeconfig=${cmKubeconfig}`,
      `--authorization-kubeconfig=${cmKubeconfig}`,
      '--bind-address=127.0.0.1',
      '--secure-port=0',
      '--use-service-account-credentials',
      `--service-account-private-key-file=${pki.serviceAccountKey}`,
      `--root-ca-file=${pki.caCert}`,
      `--cluster-signing-cert-file=${pki.caCert}`,
      `--cluster-signing-key-file=${pki.caKey}`,
      '--leader-elect=false',
      '--controllers=*',
      '--node-monitor-grace-period=8760h',
      '--node-startup-grace-period=8760h',
      featureGatesFlag({ WatchListClient: false, ...gates }),
    ],
    join(dir, 'kube-controller-manager.log'),
    restartLater,
  );
  const daemons = [etcd, apiserver, controllerManager];

  // Whatever ends this process, they end too (pdeathsig covers SIGKILL of it).
  const onExit = () => daemons.forEach((d) => d.killNow());
  process.once('exit', onExit);

  const stop = async () => {
    stopping = true;
    process.off('exit', onExit);
    for (const d of [controllerManager, apiserver, etcd]) await d.stop();
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    etcd.start();
    apiserver.start();
    await untilOk(url, '/readyz', tls, [etcd, apiserver], 'kube-apiserver /readyz');
    controllerManager.start();
    // The ServiceAccount controller has made the default namespace's ServiceAccount: the controllers run.
    await untilOk(
      url,
      '/api/v1/namespaces/default/serviceaccounts/default',
      tls,
      [etcd, apiserver],
      'the controller-manager (ServiceAccount default/default)',
    );
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    ...state,
    startMs: Date.now() - t0,
    pids: () => daemons.map((d) => d.pid).filter((p): p is number => p !== undefined),
    stopApiServer: () => apiserver.stop(),
    async startApiServer() {
      apiserver.start();
      await untilOk(url, '/readyz', tls, [etcd, apiserver], 'kube-apiserver /readyz after a restart');
    },
    async stopControllerManager() {
      cmWanted = false;
      await controllerManager.stop();
    },
    async startControllerManager() {
      cmWanted = true;
      if (controllerManager.pid === undefined) controllerManager.start();
    },
    stop,
  };
}

/** The state of a control plane at `url` whose PKI is `pki`, with its admin kubeconfig written in `dir`. */
function controlPlaneState(release: string, url: string, dir: string, pki: Pki): ControlPlaneState {
  const adminKubeconfig = writeKubeconfig(join(dir, 'admin.kubeconfig'), url, pki.caCert, pki.adminCert, pki.adminKey);
  return {
    release,
    url,
    dir,
    caFile: pki.caCert,
    caKey: pki.caKey,
    servingCert: pki.servingCert,
    servingKey: pki.servingKey,
    adminKubeconfig,
    adminCert: pki.adminCert,
    adminKey: pki.adminKey,
  };
}

/** The part of a control plane a test process in another process gets. */
export function stateOf(cp: ControlPlane): ControlPlaneState {
  const { release, url, dir, caFile, caKey, servingCert, servingKey, adminKubeconfig, adminCert, adminKey } = cp;
  return { release, url, dir, caFile, caKey, servingCert, servingKey, adminKubeconfig, adminCert, adminKey };
}
