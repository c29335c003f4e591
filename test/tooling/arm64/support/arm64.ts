// linux/arm64 on this x86-64 machine: the arm64 executable and arm64
// operators run by qemu-user through a binfmt_misc of their own namespace
// (scripts/emulation.ts), as an arm64 kernel would run them.

import { execFileSync } from 'node:child_process';
import { existsSync, openSync, readSync, closeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { emulated } from '../../../../scripts/emulation.ts';
import { executablePath } from '../../../../sidecar/build/targets.ts';
import { Proc, tempDir } from '../../../support/proc.ts';

export const EXE_ARM64 = executablePath(resolve('.'), 'arm64');
if (!existsSync(EXE_ARM64)) throw new Error(`${EXE_ARM64} is missing: run 'npm run build -- --arch arm64' first`);

/** Runs ARGV (arm64 programs, or programs that exec them) under emulation. */
export function arm64(argv: readonly string[], env: NodeJS.ProcessEnv = {}): Proc {
  const [file, ...args] = emulated('arm64', argv);
  return new Proc(file, args, env);
}

/** e_machine of an ELF file: 0xb7 for AArch64, 0x3e for x86-64. */
export function elfMachine(path: string): number {
  const header = Buffer.alloc(20);
  const fd = openSync(path, 'r');
  try {
    readSync(fd, header, 0, 20, 0);
  } finally {
    closeSync(fd);
  }
  if (header.readUInt32BE(0) !== 0x7f454c46) throw new Error(`${path} is not an ELF file`);
  return header.readUInt16LE(18);
}
export const AARCH64 = 0xb7;

/** The Go client's example operator (clients/go/example), built for linux/arm64: static, no libc. */
export function buildGoExample(): string {
  const out = join(tempDir(), 'example');
  execFileSync('go', ['build', '-o', out, './example'], {
    cwd: resolve('clients/go'),
    stdio: 'inherit',
    env: { ...process.env, GOOS: 'linux', GOARCH: 'arm64', CGO_ENABLED: '0', GOFLAGS: '-mod=mod' },
  });
  return out;
}
