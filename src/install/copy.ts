// The copy of install's files, read past the page cache (O_DIRECT) where the
// file system allows it. install copies the executable it is itself running
// from: the pages its own start touched are read a second time by the copy,
// and Linux then moves them to the active list, where they stay charged to the
// cgroup that brought them in, the operator's pod, in its working set (what
// `kubectl top` shows and the eviction ranks by) long after the init container
// ended: about 50 MiB when the image's pages were not in the page cache
// (docs/performance.md, "What drainguard costs a pod"). A direct read brings
// no page in and marks none.

import { closeSync, constants, copyFileSync, fstatSync, openSync, readSync, writeSync } from 'node:fs';
import { InstallSourceError } from './sources.ts';

const CHUNK = 1 << 20;

/**
 * A direct read needs memory aligned to the device's block: a WebAssembly memory is
 * mapped by V8 at a page boundary, where a Buffer is wherever malloc put it.
 */
let aligned: Uint8Array | undefined;
const alignedChunk = () => (aligned ??= new Uint8Array(new wasm.Memory({ initial: CHUNK / 65536 }).buffer, 0, CHUNK));
/** The one WebAssembly API used (the TypeScript lib of this project declares none). */
const wasm = (globalThis as unknown as { WebAssembly: { Memory: new (pages: { initial: number }) => { buffer: ArrayBuffer } } })
  .WebAssembly;

/** Copies `from` to `to` (created or truncated, mode 0666 before the umask, as copyFileSync); reads it with O_DIRECT where possible. */
export function copyPastPageCache(from: string, to: string): void {
  let src: number;
  try {
    src = openSync(from, constants.O_RDONLY | constants.O_DIRECT);
  } catch (err) {
    // EINVAL: a file system without direct reads.
    if ((err as NodeJS.ErrnoException).code !== 'EINVAL') throw err;
    return copyFileSync(from, to);
  }
  let direct: boolean;
  try {
    direct = copyFrom(src, from, to);
  } finally {
    closeSync(src);
  }
  if (!direct) copyFileSync(from, to);
}

/** Copies the open file `src` to `to`; false when the device refuses the first direct read (its alignment is not this memory's). */
function copyFrom(src: number, from: string, to: string): boolean {
  const dst = openSync(to, 'w');
  try {
    const buf = alignedChunk();
    const size = fstatSync(src).size;
    for (let pos = 0; pos < size;) {
      let n: number;
      try {
        n = readSync(src, buf, 0, CHUNK, pos);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EINVAL' && pos === 0) return false;
        throw err;
      }
      if (n === 0) throw new InstallSourceError(`${from} ended at byte ${pos} of ${size} while it was copied`);
      for (let done = 0; done < n;) done += writeSync(dst, buf, done, n - done);
      pos += n;
    }
    return true;
  } finally {
    closeSync(dst);
  }
}
