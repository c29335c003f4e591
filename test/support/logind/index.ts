// A private system bus and a small logind of our own (main.go beside this
// file), for the kubelet's graceful node shutdown: the kubelet's shutdown
// manager talks to systemd-logind over the system D-Bus (DBUS_SYSTEM_BUS_ADDRESS
// points it here), takes a delay inhibitor lock, and runs its real shutdown at
// PrepareForShutdown(true), which shutdown() makes logind emit. Debian's dbus
// package gives dbus-daemon; the helper is built with the go command into
// ~/.cache/drainguard/logind/HASH/ once per source. Nothing here reaches the
// host's own bus or logind.

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { Daemon } from '../daemon-process.ts';
import { GO, goEnv } from '../go.ts';

const SOURCE = import.meta.dirname;
const READY_MS = 30_000;

/** The helper, built once per source into the cache; its path. */
export function logindBinary(): string {
  const hash = createHash('sha256');
  for (const f of ['main.go', 'go.mod', 'go.sum']) hash.update(readFileSync(join(SOURCE, f)));
  const dir = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'drainguard/logind', hash.digest('hex').slice(0, 16));
  const out = join(dir, 'logind');
  if (existsSync(out)) return out;
  mkdirSync(dir, { recursive: true });
  execFileSync(GO, ['build', '-o', `${out}.tmp`, '.'], { cwd: SOURCE, env: goEnv(), stdio: ['ignore', 'inherit', 'inherit'] });
  renameSync(`${out}.tmp`, out);
  return out;
}

export interface Logind {
  /** DBUS_SYSTEM_BUS_ADDRESS for the kubelet. */
  readonly address: string;
  /** What logind said so far, one line each: ready, inhibit WHO WHAT MODE, shutdown, released WHO. */
  lines(): string[];
  /** Emits PrepareForShutdown(true); resolves once logind has. */
  shutdown(): Promise<void>;
  stop(): Promise<void>;
}

const busConfig = (socket: string) => `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <listen>unix:path=${socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`;

/** Starts a private bus and logind in `dir`; resolves once logind owns its name. */
export async function startLogind(dir: string, inhibitDelayMax = '30s'): Promise<Logind> {
  mkdirSync(dir, { recursive: true });
  const socket = join(dir, 'bus.sock');
  const address = `unix:path=${socket}`;
  writeFileSync(join(dir, 'bus.conf'), busConfig(socket));
  const bus = new Daemon(
    'dbus',
    'dbus-daemon',
    [`--config-file=${join(dir, 'bus.conf')}`, '--nofork', '--nopidfile'],
    join(dir, 'dbus.log'),
  );
  const log = join(dir, 'logind.log');
  const logind = new Daemon('logind', logindBinary(), [`--address=${address}`, `--inhibit-delay-max=${inhibitDelayMax}`], log);
  const lines = () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []);
  const stop = async () => {
    await logind.stop();
    await bus.stop();
  };
  try {
    bus.start();
    await until(
      () => existsSync(socket),
      READY_MS,
      'the private bus listening',
      () => bus.tail(),
    );
    logind.start();
    await until(
      () => lines().includes('ready'),
      READY_MS,
      'logind on the bus',
      () => `${lines().join('\n')}\n${bus.tail()}`,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    address,
    lines,
    shutdown: async () => {
      const before = lines().filter((l) => l === 'shutdown').length;
      process.kill(logind.pid!, 'SIGUSR1');
      await until(
        () => lines().filter((l) => l === 'shutdown').length > before,
        10_000,
        'PrepareForShutdown emitted',
        () => lines().join('\n'),
      );
    },
    stop,
  };
}

async function until(check: () => boolean, ms: number, what: string, detail: () => string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}\n${detail()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
