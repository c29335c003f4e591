// tini's reaping test, for drainguard: an operator that leaves grandchildren
// behind (their parent exits at once, so they are re-parented to PID 1), the
// test kills them, and then no process of the namespace may be a zombie. The
// processes are read from /proc as the namespace sees it: the procfs mounted
// in its root, /proc/INIT/root/proc from here.

import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import * as assert from 'uvu/assert';
import type { Proc } from '../../../support/proc.ts';
import { until } from '../../../support/wait.ts';

export const ORPHANS = 8;

/**
 * The operator (busybox sh): ORPHANS `sleep`s whose parent exits at once, as
 * many `true`s that exit by themselves (before or after their parent), then
 * `ready`. SIGWINCH is echoed (the test's mark that a signal went all the way
 * through PID 1); SIGTERM ends it with 7; SIGUSR1 makes it SIGKILL itself.
 */
export const OPERATOR = [
  '/bin/busybox',
  'sh',
  '-c',
  `
trap 'echo "signal TERM"; exit 7' TERM
trap 'echo "signal WINCH"' WINCH
trap '/bin/busybox kill -KILL $$' USR1
i=0
while [ $i -lt ${ORPHANS} ]; do
  /bin/busybox sh -c '/bin/busybox sleep 1000 & echo "orphan $!"'
  /bin/busybox sh -c '/bin/busybox true &'
  i=$((i + 1))
done
echo ready
/bin/busybox sleep 100000 &
while :; do wait $!; done`,
];

export interface NsProcess {
  readonly pid: number;
  readonly ppid: number;
  /** R, S, Z, ... as in /proc/PID/stat. */
  readonly state: string;
  readonly comm: string;
}

/** The processes a reaper is responsible for, and the host's pid of each (what the test's kill needs). */
export interface ProcessView {
  processes(): NsProcess[];
  hostPid(pid: number): number;
}

/** pid (comm) state ppid ...: comm may hold spaces and parentheses. */
function readStat(path: string, pid: number): NsProcess | undefined {
  try {
    const stat = readFileSync(path, 'utf8');
    const close = stat.lastIndexOf(')');
    const [state, ppid] = stat.slice(close + 2).split(' ');
    return { pid, ppid: Number(ppid), state: state!, comm: stat.slice(stat.indexOf('(') + 1, close) };
  } catch {
    return undefined; // reaped meanwhile
  }
}

const pids = (proc: string): number[] =>
  readdirSync(proc)
    .filter((name) => /^\d+$/.test(name))
    .map(Number);

/** A PID namespace seen from the outside, through the host's pid of a process in it: its pids, from the /proc mounted in its root. */
export class PidNamespace implements ProcessView {
  readonly #member: number;

  constructor(member: number) {
    this.#member = member;
  }

  processes(): NsProcess[] {
    const proc = `/proc/${this.#member}/root/proc`;
    return pids(proc).flatMap((pid) => readStat(`${proc}/${pid}/stat`, pid) ?? []);
  }

  hostPid(nsPid: number): number {
    const ns = readlinkSync(`/proc/${this.#member}/ns/pid`);
    for (const pid of pids('/proc')) {
      try {
        if (readlinkSync(`/proc/${pid}/ns/pid`) !== ns) continue;
        const nspid = /^NSpid:\s+(.*)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]!.split(/\s+/);
        if (Number(nspid.at(-1)) === nsPid) return pid;
      } catch {
        // gone
      }
    }
    throw new Error(`no process ${nsPid} in the PID namespace of ${this.#member}`);
  }
}

/** A process and its descendants in this PID namespace: what a child subreaper is responsible for. */
export class ProcessTree implements ProcessView {
  readonly #root: number;

  constructor(root: number) {
    this.#root = root;
  }

  processes(): NsProcess[] {
    const all = pids('/proc').flatMap((pid) => readStat(`/proc/${pid}/stat`, pid) ?? []);
    const tree = new Set([this.#root]);
    for (let grew = true; grew;) {
      grew = false;
      for (const p of all) if (!tree.has(p.pid) && tree.has(p.ppid)) grew = Boolean(tree.add(p.pid));
    }
    return all.filter((p) => tree.has(p.pid));
  }

  hostPid(pid: number): number {
    return pid;
  }
}

/** Checks `predicate` every few milliseconds: the kernel tells no one but the parent that a process exited. */
export function poll<T>(predicate: () => T | undefined, ms: number, what: string): Promise<T> {
  return until(
    (check) => {
      const timer = setInterval(check, 5);
      return () => clearInterval(timer);
    },
    predicate,
    ms,
    what,
  );
}

export interface Orphaned {
  /** The `sleep`s (pids as `view` has them), each re-parented to the reaper before it was killed. */
  readonly orphans: readonly number[];
  /** The zombies once every process that was to exit had exited, and a signal had gone through the reaper since. */
  readonly zombies: readonly NsProcess[];
}

/**
 * With the operator (OPERATOR) running under drainguard: checks that its orphans are children
 * of `reaper` (the pid the kernel re-parents them to), kills them, waits until every process
 * that is to exit has exited, and then until a SIGWINCH sent to `signalTo` (the host's pid of
 * the reaper) has gone through it to the operator. The reaper takes a pending SIGCHLD (17)
 * before that SIGWINCH (28), lower signals first, so by then any zombie left is left for good.
 */
export async function leaveOrphans(p: Proc, view: ProcessView, reaper: number, signalTo: number): Promise<Orphaned> {
  await p.line('ready', 30_000);
  const operator = (await p.log('operator started')).pid as number;
  const orphans = p.stdout.filter((l) => l.startsWith('orphan ')).map((l) => Number(l.split(' ')[1]));
  assert.is(orphans.length, ORPHANS, p.stdout.join('\n'));
  const before = view.processes();
  for (const pid of orphans) {
    const orphan = before.find((x) => x.pid === pid);
    assert.ok(orphan && orphan.comm === 'busybox' && orphan.state !== 'Z', `orphan ${pid} running: ${JSON.stringify(before)}`);
    assert.is(orphan.ppid, reaper, `orphan ${pid} re-parented to ${reaper}: ${JSON.stringify(before)}`);
  }
  for (const pid of orphans) process.kill(view.hostPid(pid), 'SIGKILL');
  // Settled: every process has exited but the reaper, drainguard, the operator and the operator's own `sleep 100000`.
  const staying = (x: NsProcess, all: readonly NsProcess[]): boolean =>
    x.pid === reaper || x.pid === operator || x.ppid === operator || all.some((o) => o.pid === operator && o.ppid === x.pid);
  await poll(
    () => {
      const all = view.processes();
      return all.every((x) => x.state === 'Z' || staying(x, all)) ? true : undefined;
    },
    10_000,
    "the exit of every process but the reaper, drainguard and the operator's",
  );
  process.kill(signalTo, 'SIGWINCH');
  await p.line('signal WINCH');
  return { orphans, zombies: view.processes().filter((x) => x.state === 'Z') };
}
