// Hostile frames for the drain socket, and an independent model of what
// drainguard must answer, written from the protocol's rules:
//   - a line longer than 64 KiB, bytes that are not UTF-8, text that is not a
//     JSON object, or a message before hello: `error`, then the connection closes;
//   - hello needs an integer protocol (1 is spoken), inflight a non-negative
//     integer count, every message a string type; anything else is ignored;
//   - a control request (request-drain) is refused by `drainguard run`.

import type { Prng } from '../../../support/random.ts';

export const MAX_LINE_BYTES = 64 * 1024;

export type Verdict = 'hello' | 'ignored' | 'fatal';

const decoder = new TextDecoder('utf-8', { fatal: true });
const isInteger = (v: unknown) => Number.isSafeInteger(v);

/** What drainguard must do with one complete line (without its newline). */
export function verdict(line: Buffer, greeted: boolean): Verdict {
  if (line.length > MAX_LINE_BYTES) return 'fatal';
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(line));
  } catch {
    return 'fatal';
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'fatal';
  const m = value as Record<string, unknown>;
  if (typeof m.type !== 'string') return 'fatal';
  if (m.type === 'hello' && !isInteger(m.protocol)) return 'fatal';
  if (m.type === 'inflight' && !(isInteger(m.count) && (m.count as number) >= 0)) return 'fatal';
  if (m.type === 'request-drain' && !isInteger(m.protocol)) return 'fatal';
  if (greeted) return 'ignored';
  return m.type === 'hello' && m.protocol === 1 ? 'hello' : 'fatal';
}

export interface Prediction {
  readonly welcome: boolean;
  readonly error: boolean;
  /** Bytes up to and including the first fatal line: what is worth sending. */
  readonly sendBytes: number;
  readonly lines: number;
}

/** Runs the model over a whole transcript a client sends before closing. */
export function predict(transcript: Buffer): Prediction {
  let greeted = false;
  let start = 0;
  let lines = 0;
  for (let nl = transcript.indexOf(10); nl !== -1; nl = transcript.indexOf(10, start)) {
    const v = verdict(transcript.subarray(start, nl), greeted);
    lines++;
    start = nl + 1;
    if (v === 'fatal') return { welcome: greeted, error: true, sendBytes: start, lines };
    if (v === 'hello') greeted = true;
  }
  // A partial line left at the end is dropped with the connection, unless it is already too long.
  const error = transcript.length - start > MAX_LINE_BYTES;
  if (start < transcript.length) lines++;
  return { welcome: greeted, error, sendBytes: transcript.length, lines };
}

const HELLO = '{"type":"hello","protocol":1,"name":"fuzz","pid":1}';

const deep = (random: Prng, open: string, close: string, most = 20_000) => {
  const depth = 1 + random.int(most);
  return open.repeat(depth) + close.repeat(depth);
};

const hugeNumber = (random: Prng) =>
  random.pick(['1e309', '-1e309', '9007199254740993', '1'.repeat(1 + random.int(5000)), '0.' + '0'.repeat(400) + '1', '-0', '1E+400']);

/** Valid JSON objects that must be ignored once a client has said hello; a big one now and then. */
function ignorable(random: Prng): string {
  switch (random.int(100) === 0 ? 3 + random.int(4) : random.pick([0, 1, 2, 5, 7, 8])) {
    case 0:
      return `{"type":"inflight","count":${random.int(1_000_000)}}`;
    case 1:
      return HELLO;
    case 2:
      return `{"type":"x-${random.int(1000)}","extra":${hugeNumber(random)}}`;
    case 3:
      return `{"type":"future","nested":${deep(random, '[', ']')}}`;
    case 4:
      return `{"type":"future","nested":${deep(random, '{"a":', '}', 12_000).replace(/}+$/, (m) => `1${m}`)}}`;
    case 5:
      return `{"type":"hello","protocol":2,"__proto__":{"greeted":true},"constructor":{"prototype":{"x":1}}}`;
    case 6:
      return `{"type":"${'t'.repeat(random.int(60_000))}"}`;
    case 7:
      return `{"type":"inflight","count":0,"unknown":"${'\\u0000\\ud800'.repeat(random.int(50))}"}`;
    default:
      return `{"type":"request-drain","protocol":1,"source":"${'s'.repeat(random.int(200))}"}`;
  }
}

/** Frames that break a rule, or may (mutations). */
function hostile(random: Prng): Buffer {
  switch (random.int(20) === 0 ? random.pick([4, 6, 7]) : random.pick([0, 1, 2, 3, 5, 8, 9, 10, 11, 12, 13, 14, 15])) {
    case 0:
      return random.bytes(1 + random.int(200));
    case 1:
      return Buffer.from(
        random.pick(['[]', '[1,2]', '"hello"', '42', 'null', 'true', '{}', '{"type":5}', '{"type":null}', '{"TYPE":"hello"}', '']),
      );
    case 2:
      return Buffer.from(`{"type":"hello","protocol":${random.pick(['"1"', '1.5', '-1', '2', '0', hugeNumber(random), 'null', '[1]'])}}`);
    case 3:
      return Buffer.from(`{"type":"inflight","count":${random.pick(['-1', '1.5', '"3"', 'null', hugeNumber(random)])}}`);
    case 4:
      return Buffer.from(deep(random, '[', ']'));
    case 5:
      return Buffer.concat([
        Buffer.from('{"type":"x","s":"'),
        Buffer.from(random.pick([[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82]])),
        Buffer.from('"}'),
      ]);
    case 6:
      return Buffer.from(`{"type":"x","pad":"${'a'.repeat(MAX_LINE_BYTES - 20 + random.int(40))}"}`);
    case 7:
      return Buffer.alloc(MAX_LINE_BYTES + 1 + random.int(100_000), 'a');
    case 8:
      return Buffer.from(`\uFEFF${HELLO}`);
    case 9:
      return Buffer.from(`${HELLO}\r`);
    case 10:
      return Buffer.from('{"type":"x"}\0');
    case 11:
      return Buffer.from(`{"type":"request-drain","protocol":${random.pick(['1', '2', '"1"'])}}`);
    case 12:
      return Buffer.from('{"type":"drained"}');
    default:
      return mutate(random, Buffer.from(random.int(2) ? HELLO : ignorable(random)));
  }
}

/** One to three random edits of a frame: flipped, inserted, deleted, repeated or cut bytes. */
export function mutate(random: Prng, frame: Buffer): Buffer {
  let out = Buffer.from(frame);
  for (let n = 1 + random.int(3); n > 0; n--) {
    const at = random.int(out.length + 1);
    switch (random.int(5)) {
      case 0:
        if (at < out.length) out[at] = out[at]! ^ (1 << random.int(8));
        break;
      case 1:
        out = Buffer.concat([out.subarray(0, at), random.bytes(1), out.subarray(at)]);
        break;
      case 2:
        out = Buffer.concat([out.subarray(0, at), out.subarray(at + 1 + random.int(4))]);
        break;
      case 3:
        out = Buffer.concat([out.subarray(0, at), out.subarray(at, at + 8), out.subarray(at)]);
        break;
      default:
        out = out.subarray(0, at);
    }
  }
  // A mutation that makes a newline makes two frames; keep it as one.
  for (let i = 0; i < out.length; i++) if (out[i] === 10) out[i] = 32;
  return out;
}

/**
 * A transcript for one connection: usually a hello, then frames that must be
 * ignored, with a hostile one now and then; sometimes no newline at the end.
 */
export function transcript(random: Prng, frames: number): { bytes: Buffer; frames: number } {
  const parts: Buffer[] = [];
  if (random.int(10) > 0) parts.push(random.int(20) ? Buffer.from(HELLO) : hostile(random));
  while (parts.length < frames) parts.push(random.int(30) === 0 ? hostile(random) : Buffer.from(ignorable(random)));
  const lines = parts.map((p, i) => (i === parts.length - 1 && random.int(10) === 0 ? p : Buffer.concat([p, Buffer.from('\n')])));
  return { bytes: Buffer.concat(lines), frames: parts.length };
}
