// drainguard's stderr, written with write(2) on descriptor 2. Making
// process.stderr is a measurable part of every start (a stream over a tty,
// file or pipe handle: docs/performance.md); on Linux its writes to all three
// are synchronous anyway, so lines come out in the same order, at the same moments.

import { writeSync } from 'node:fs';
import { isatty } from 'node:tty';

export interface Stderr {
  write(chunk: string): boolean;
  readonly isTTY: boolean;
}

export function stderrWriter(): Stderr {
  // A descriptor someone else made non-blocking (EAGAIN) is left to process.stderr, which waits
  // for it, from then on: no line may overtake one still queued there.
  let stream: NodeJS.WriteStream | undefined;
  return {
    isTTY: isatty(2),
    write(chunk) {
      if (stream) return stream.write(chunk);
      const bytes = Buffer.from(chunk);
      let done = 0;
      try {
        // A write interrupted by a signal may be partial.
        while (done < bytes.length) done += writeSync(2, bytes, done);
        return true;
      } catch (err) {
        // EPIPE and the like: nobody reads it any more, and logging is best effort.
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') return false;
        stream = process.stderr;
        stream.on('error', () => {});
        return stream.write(bytes.subarray(done));
      }
    },
  };
}
