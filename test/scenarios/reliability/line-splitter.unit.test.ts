// The line splitter every drain-protocol connection reads through: what it
// yields must not depend on how the stream was cut into chunks, and a line
// that arrives a byte at a time must cost its bytes, not an object per byte.

import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { LineSplitter, MAX_LINE_BYTES } from '../../../src/protocol/messages.ts';
import { transcript } from './support/frames.ts';
import { mib } from './support/procfs.ts';
import { prng } from '../../support/random.ts';
import { sizes } from './support/sizes.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Feeds the chunks in order; returns the lines and the error that ended them, if any. */
function split(chunks: readonly Buffer[]): { lines: string[]; error?: string } {
  const splitter = new LineSplitter();
  const lines: string[] = [];
  try {
    for (const chunk of chunks) splitter.push(chunk, (line) => lines.push(line));
  } catch (err) {
    return { lines, error: (err as Error).message };
  }
  return { lines };
}

function cut(bytes: Buffer, random: ReturnType<typeof prng>, most: number): Buffer[] {
  const chunks: Buffer[] = [];
  for (let i = 0; i < bytes.length;) {
    const n = 1 + random.int(most);
    chunks.push(bytes.subarray(i, i + n));
    i += n;
  }
  return chunks;
}

test('the same lines and the same error, whole, in random chunks, or a byte at a time', () => {
  const random = prng(sizes.seed);
  for (let i = 0; i < 400; i++) {
    const { bytes } = transcript(random, 1 + random.int(40));
    const whole = split([bytes]);
    const context = `seed ${sizes.seed}, transcript ${i}`;
    assert.equal(split(cut(bytes, random, 5000)), whole, context);
    if (bytes.length < 20_000) assert.equal(split(cut(bytes, random, 1)), whole, context);
  }
});

test('lines before a bad line in the same chunk are yielded before the error', () => {
  const result = split([Buffer.from('{"type":"drained"}\n\xff\n{"type":"x"}\n', 'latin1')]);
  assert.equal(result, { lines: ['{"type":"drained"}'], error: 'line is not valid UTF-8' });
  const long = split([Buffer.concat([Buffer.from('one\ntwo\n'), Buffer.alloc(MAX_LINE_BYTES + 1, 'a')])]);
  assert.equal(long, { lines: ['one', 'two'], error: `line longer than ${MAX_LINE_BYTES} bytes` });
  assert.equal(split([Buffer.alloc(MAX_LINE_BYTES, 'a'), Buffer.from('\n')]).lines.length, 1, 'exactly 64 KiB is allowed');
});

test('a partial line arriving a byte at a time holds about its own size', () => {
  const splitters = 20;
  const byte = Buffer.from('a');
  // JavaScript objects plus the buffers behind them, after a full collection.
  const held = () => {
    gc();
    return getHeapStatistics().used_heap_size + process.memoryUsage().arrayBuffers;
  };
  const before = held();
  const splitting: LineSplitter[] = [];
  for (let s = 0; s < splitters; s++) {
    const splitter = new LineSplitter();
    for (let i = 0; i < MAX_LINE_BYTES; i++) splitter.push(byte, (line) => assert.unreachable(`a line from a partial one: ${line}`));
    splitting.push(splitter);
  }
  const grownKiB = (held() - before) / 1024;
  console.log(`  ${splitters} partial lines of 64 KiB, a byte per chunk: ${mib(grownKiB)} (${(grownKiB / splitters).toFixed(0)} KiB each)`);
  // About one buffer per line; one object per byte would be about a hundred times the line.
  assert.ok(grownKiB < splitters * 2 * 64, `grew ${mib(grownKiB)}`);
  assert.equal(splitting.length, splitters);
});

test.run();
