// Start time and idle memory, drainguard against the bare Node.js runtime it
// embeds.

import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { nowMs } from './lib/clock.ts';
import { type Rss, dropFromPageCache, rssOf } from './lib/mem.ts';
import { EXE, NODE } from './lib/paths.ts';
import { BenchProc } from './lib/proc.ts';
import { MiB, median } from './lib/stats.ts';

export interface StartResult {
  readonly runs: number;
  readonly drainguardMs: number;
  /** `drainguard --version`: the executable's own start, without listening or starting a child. */
  readonly versionMs: number;
  readonly nodeMs: number;
  readonly startRatio: number;
}

/** `drainguard run -- /bin/true` and `node -e 0` alternately; median wall time of each. */
export async function runStart(runs: number, progress: (done: number, total: number) => void): Promise<StartResult> {
  const warmup = 3;
  const dg: number[] = [];
  const version: number[] = [];
  const node: number[] = [];
  for (let i = 0; i < runs + warmup; i++) {
    const a = await timeToExit(EXE, ['run', '--', '/bin/true']);
    const b = await timeToExit(NODE, ['-e', '0']);
    const c = await timeToExit(EXE, ['--version']);
    if (i >= warmup) {
      dg.push(a);
      node.push(b);
      version.push(c);
    }
    progress(i + 1, runs + warmup);
  }
  return { runs, drainguardMs: median(dg), versionMs: median(version), nodeMs: median(node), startRatio: median(dg) / median(node) };
}

function timeToExit(file: string, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = nowMs();
    const child = spawn(file, args, { stdio: 'ignore', env: { PATH: process.env.PATH } });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(nowMs() - start) : reject(new Error(`${file} ${args.join(' ')} exited ${code}`))));
  });
}

export interface IdleRss {
  readonly rssMiB: number;
  readonly anonMiB: number;
  readonly fileMiB: number;
}

export interface MemoryResult {
  /** Executables freshly written (as after an image pull): their pages sit in the page cache as written. */
  readonly written: Record<string, IdleRss | null>;
  /** The same executables after dropping them from the page cache (as after a reboot). */
  readonly cold: Record<string, IdleRss | null>;
  readonly sidecarNote?: string;
}

type Subject = 'node' | 'run' | 'sidecar';

/**
 * Idle RSS of a bare `node` and of `drainguard run` and `drainguard sidecar`.
 * Both executables are copied to a private directory first, written the same
 * way, so their pages are in the same state in the page cache and no other
 * process maps them; see docs/performance.md for why that matters.
 */
export async function runMemory(reps: number, progress: (label: string) => void): Promise<MemoryResult> {
  const dir = mkdtempSync(join(tmpdir(), 'drainguard-bench-'));
  try {
    const node = join(dir, 'node');
    const dg = join(dir, 'drainguard');
    for (const [from, to] of [
      [NODE, node],
      [EXE, dg],
    ] as const) {
      writeFileSync(to, readFileSync(from));
      chmodSync(to, 0o755);
    }
    const hasSidecar = spawnSync(dg, ['sidecar', '--help'], { stdio: 'ignore' }).status === 0;
    const subjects: Subject[] = hasSidecar ? ['node', 'run', 'sidecar'] : ['node', 'run'];
    const measure = async (cold: boolean): Promise<Record<string, IdleRss | null>> => {
      const samples: Record<string, Rss[]> = {};
      for (let r = 0; r < reps; r++) {
        for (const s of subjects) {
          progress(`${cold ? 'cold' : 'written'} ${s} ${r + 1}/${reps}`);
          if (cold) {
            dropFromPageCache(node);
            dropFromPageCache(dg);
          }
          (samples[s] ??= []).push(await idle(s, s === 'node' ? node : dg, dir));
        }
      }
      const out: Record<string, IdleRss | null> = { node: null, run: null, sidecar: null };
      for (const s of subjects) {
        const list = samples[s]!;
        out[s] = {
          rssMiB: median(list.map((x) => x.rss)) / MiB,
          anonMiB: median(list.map((x) => x.anon)) / MiB,
          fileMiB: median(list.map((x) => x.file)) / MiB,
        };
      }
      return out;
    };
    const written = await measure(false);
    const cold = await measure(true);
    return { written, cold, ...(!hasSidecar && { sidecarNote: "this build has no 'drainguard sidecar'" }) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const SETTLE_MS = 500;

async function idle(subject: Subject, file: string, dir: string): Promise<Rss> {
  const env = { HOME: dir, DRAINGUARD_LOG_LEVEL: 'info' };
  const proc =
    subject === 'node'
      ? new BenchProc(file, ['-e', "console.log('ready'); setInterval(() => {}, 1 << 30)"], env)
      : subject === 'run'
        ? new BenchProc(file, ['run', '--', '/bin/sh', '-c', 'echo ready; exec sleep 600'], env, { stderr: true })
        : new BenchProc(file, ['sidecar'], { ...env, DRAINGUARD_SOCKET: join(dir, 'drain.sock'), DRAINGUARD_HTTP_ADDR: '127.0.0.1:0' }, { stderr: true });
  try {
    if (subject === 'sidecar') await proc.waitFor((l) => l.includes('"sidecar ready"'), 30_000, 'sidecar ready', 'stderr');
    else await proc.waitLine('ready', 30_000);
    await delay(SETTLE_MS);
    return rssOf(proc.pid);
  } finally {
    proc.signal('SIGTERM');
    await proc.waitExit(10_000, `${subject} idle`).catch(() => proc.kill());
  }
}
