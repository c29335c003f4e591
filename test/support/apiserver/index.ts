// The stand-in control plane for the tests when no real one can be had
// (test/support/tier.ts): main.ts as a process of its own, with the same PKI
// and state as the real control plane (test/support/cluster/control-plane.ts),
// so TestCluster, drainguard's kubeconfig and in-cluster configuration work on
// it unchanged. See README.md beside this file.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ControlPlane, controlPlaneState } from '../cluster/control-plane.ts';
import { makePki } from '../cluster/pki.ts';

const READY_MS = 30_000;
const MAIN = join(import.meta.dirname, 'main.ts');

export async function startStandIn(): Promise<ControlPlane> {
  const t0 = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'drainguard-standin-'));
  mkdirSync(join(dir, 'pki'));
  const pki = makePki(join(dir, 'pki'));
  // Under setpriv --pdeathsig, in a process group of its own: it dies with whoever started it.
  const child: ChildProcess = spawn('setpriv', ['--pdeathsig', 'SIGKILL', '--', process.execPath, MAIN, pki.dir], { stdio: ['pipe', 'pipe', 'inherit'], detached: true });
  let output = '';
  const waiters: { match: RegExp; resolve: (m: RegExpExecArray) => void; reject: (e: Error) => void }[] = [];
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    output += d;
    for (const w of [...waiters]) {
      const m = w.match.exec(output);
      if (m) {
        waiters.splice(waiters.indexOf(w), 1);
        output = output.slice(m.index + m[0].length);
        w.resolve(m);
      }
    }
  });
  child.once('exit', (code, signal) => {
    for (const w of waiters.splice(0)) w.reject(new Error(`the stand-in API server exited (${code ?? signal})`));
  });
  const expect = (match: RegExp, ms: number, what: string) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the stand-in API server: no ${what} within ${ms} ms`)), ms);
      waiters.push({ match, resolve: (m) => (clearTimeout(timer), resolve(m)), reject: (e) => (clearTimeout(timer), reject(e)) });
      child.stdout!.emit('data', '');
    });
  const command = async (name: string) => {
    child.stdin!.write(`${name}\n`);
    await expect(new RegExp(`^ok ${name}$`, 'm'), READY_MS, `answer to ${name}`);
  };
  let port: number;
  try {
    port = Number((await expect(/^ready (\d+)$/m, READY_MS, 'ready line'))[1]);
  } catch (err) {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const url = `https://127.0.0.1:${port}`;
  const onExit = () => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {}
  };
  process.once('exit', onExit);
  return {
    ...controlPlaneState('stand-in', url, dir, pki),
    startMs: Date.now() - t0,
    pids: () => (child.exitCode === null && child.pid ? [child.pid] : []),
    stopApiServer: () => command('stop-apiserver'),
    startApiServer: () => command('start-apiserver'),
    stopControllerManager: () => command('stop-controller-manager'),
    startControllerManager: () => command('start-controller-manager'),
    async stop() {
      process.off('exit', onExit);
      if (child.exitCode === null && child.signalCode === null) {
        child.stdin!.end();
        const timer = setTimeout(() => onExit(), 10_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
