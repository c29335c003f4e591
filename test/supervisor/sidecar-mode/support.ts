// A drainguard sidecar and an operator process sharing a socket directory, as
// two containers of one pod share a volume.
import { join } from 'node:path';
import { NODE, Proc, drainguard, fixture, tempDir } from '../../support/proc.ts';

export const OPERATOR = fixture('operator.ts');

export interface Pod {
  readonly dir: string;
  readonly socket: string;
  readonly sidecar: Proc;
  /** http://HOST:PORT of the sidecar's listener, from its log. */
  readonly base: string;
}

/** Starts `drainguard sidecar` on a fresh socket directory and waits until it is ready. */
export async function startSidecar(env: NodeJS.ProcessEnv = {}, flags: string[] = []): Promise<Pod> {
  const dir = tempDir();
  const socket = join(dir, 'drain.sock');
  const sidecar = drainguard(['sidecar', ...flags], {
    DRAINGUARD_SOCKET: socket,
    DRAINGUARD_HTTP_ADDR: '127.0.0.1:0',
    DRAINGUARD_LOG_LEVEL: 'debug',
    ...env,
  });
  const listening = await sidecar.log('http listener started');
  await sidecar.log('sidecar ready');
  return { dir, socket, sidecar, base: `http://${listening.address as string}` };
}

/** Starts the fixture operator against the pod's socket and waits until drainguard welcomed it. */
export async function startOperator(pod: Pod, env: NodeJS.ProcessEnv = {}): Promise<Proc> {
  const operator = new Proc(NODE, [OPERATOR], { DRAINGUARD_SOCKET: pod.socket, ...env });
  await operator.line('ready');
  return operator;
}

/** `drainguard prestop` against the pod's socket, as the operator container's preStop hook runs it. */
export function prestop(pod: Pod | { socket: string }, flags: string[] = [], env: NodeJS.ProcessEnv = {}): Proc {
  return drainguard(['prestop', ...flags], { DRAINGUARD_SOCKET: pod.socket, ...env });
}

/** GET (or another method) with a deadline. */
export async function http(url: string, init: RequestInit = {}, ms = 10_000): Promise<{ status: number; body: string; headers: Headers }> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(ms) });
  return { status: res.status, body: await res.text(), headers: res.headers };
}

/** The indexes of the log messages in order; -1 where missing. */
export function logIndex(p: Proc, ...msgs: string[]): number[] {
  const logs = p.logs().map((l) => l.msg);
  return msgs.map((m) => logs.indexOf(m));
}

export function stillRunning(p: Proc): boolean {
  return p.child.exitCode === null && p.child.signalCode === null;
}
