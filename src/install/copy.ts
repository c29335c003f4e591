// The copy of install's files, read and written past the page cache (O_DIRECT)
// where the file system allows it. install copies the executable it is itself
// running from: the pages its own start touched are read a second time by the
// copy, and Linux then moves them to the active list, where they stay charged
// to the cgroup that brought them in, the operator's pod, in its working set
// (what `kubectl top` shows and the eviction ranks by) long after the init
// container ended. A buffered write leaves the whole copy in the page cache,
// charged to the pod too, and the pages drainguard then runs are ones the write
// touched already: taken for pages in use at the first fault. A direct read
// brings no page in and marks none; a direct write leaves none behind, so
// drainguard starts from the disk as from an image (docs/performance.md, "A
// pod's pages").

import { closeSync, constants, copyFileSync, fstatSync, ftruncateSync, openSync, readSync, writeSync } from 'node:fs';
import { InstallSourceError } from './sources.ts';

const CHUNK = 1 << 20;
/** A direct write's offset and length are multiples of the device's logical block: 4096 is one of every block size Linux has. */
const BLOCK = 4096;

/**
 * A direct read or write needs memory aligned to the device's block: a WebAssembly memory is
 * mapped by V8 at a page boundary, where a Buffer is wherever malloc put it.
 */
let aligned: Uint8Array | undefined;
const alignedChunk = () => (aligned ??= new Uint8Array(new wasm.Memory({ initial: CHUNK / 65536 }).buffer, 0, CHUNK));
/** The one WebAssembly API used (the TypeScript lib of this project declares none). */
const wasm = (globalThis as unknown as { WebAssembly: { Memory: new (pages: { initial: number }) => { buffer: ArrayBuffer } } })
  .WebAssembly;

/** Copies `from` to `to` (created or truncated, mode 0666 before the umask, as copyFileSync); with O_DIRECT where possible. */
export function copyPastPageCache(from: string, to: string): void {
  let src: number;
  try {
    src = openSync(from, constants.O_RDONLY | constants.O_DIRECT);
  } catch (err) {
    // EINVAL: a file system without direct reads.
    if (!refused(err)) throw err;
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

const refused = (err: unknown) => (err as NodeJS.ErrnoException).code === 'EINVAL';

/** Copies the open file `src` to `to`; false when the device refuses the first direct read (its alignment is not this memory's). */
function copyFrom(src: number, from: string, to: string): boolean {
  const dst = new Destination(to);
  try {
    const buf = alignedChunk();
    const size = fstatSync(src).size;
    for (let pos = 0; pos < size;) {
      let n: number;
      try {
        n = readSync(src, buf, 0, CHUNK, pos);
      } catch (err) {
        if (refused(err) && pos === 0) return false;
        throw err;
      }
      if (n === 0) throw new InstallSourceError(`${from} ended at byte ${pos} of ${size} while it was copied`);
      dst.write(buf, n);
      pos += n;
    }
    dst.end(size);
    return true;
  } finally {
    dst.close();
  }
}

/**
 * The copy's file, written with O_DIRECT while the file system takes it: whole blocks, the last one
 * zero-padded and the file then truncated to its size; buffered writes from the first one it refuses.
 */
class Destination {
  private readonly path: string;
  private fd: number;
  private direct = true;
  private pos = 0;

  constructor(path: string) {
    this.path = path;
    try {
      this.fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_DIRECT, 0o666);
    } catch (err) {
      if (!refused(err)) throw err;
      this.fd = openSync(path, 'w');
      this.direct = false;
    }
  }

  /** Writes the first `n` bytes of `buf` (an aligned chunk, `n` a multiple of BLOCK but for the file's last chunk). */
  write(buf: Uint8Array, n: number): void {
    if (this.direct) {
      const padded = Math.ceil(n / BLOCK) * BLOCK;
      buf.fill(0, n, padded);
      try {
        writeAll(this.fd, buf, padded, this.pos);
        this.pos += n;
        return;
      } catch (err) {
        if (!refused(err)) throw err;
        // A file system that opens O_DIRECT but refuses the write (its block is larger, or it has none): buffered from here.
        closeSync(this.fd);
        this.fd = openSync(this.path, constants.O_WRONLY);
        this.direct = false;
      }
    }
    writeAll(this.fd, buf, n, this.pos);
    this.pos += n;
  }

  /** The padding of the last direct write cut off. */
  end(size: number): void {
    ftruncateSync(this.fd, size);
  }

  close(): void {
    closeSync(this.fd);
  }
}

function writeAll(fd: number, buf: Uint8Array, n: number, pos: number): void {
  for (let done = 0; done < n;) done += writeSync(fd, buf, done, n - done, pos + done);
}
