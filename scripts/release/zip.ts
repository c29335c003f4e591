// A minimal zip writer (PKWARE APPNOTE 6.3): files only, deflated, in the
// order given, every entry with the same fixed time, no extra fields, so the
// same files give the same bytes. Enough for Go's module zips and the release
// archives; no zip64 (every file and the archive stay under 4 GiB).

import { crc32, deflateRawSync } from 'node:zlib';

export interface ZipEntry {
  /** Slash-separated, relative. */
  readonly name: string;
  readonly data: Buffer;
  /** Unix permission bits, kept in the external attributes (unzip restores them); default 0o644. */
  readonly mode?: number;
}

/** MS-DOS date and time of DATE (UTC; 2-second resolution; 1980 at the earliest). */
function dosTime(date: Date): { time: number; date: number } {
  const year = Math.max(date.getUTCFullYear(), 1980);
  return {
    time: (date.getUTCHours() << 11) | (date.getUTCMinutes() << 5) | (date.getUTCSeconds() >> 1),
    date: ((year - 1980) << 9) | ((date.getUTCMonth() + 1) << 5) | date.getUTCDate(),
  };
}

const UTF8_NAMES = 0x0800;
const DEFLATE = 8;
const STORE = 0;
const MADE_BY_UNIX = (3 << 8) | 20;

/** The zip archive of ENTRIES, every entry dated MTIME (default 1980-01-01). */
export function zip(entries: readonly ZipEntry[], mtime: Date = new Date(Date.UTC(1980, 0, 1))): Buffer {
  const { time, date } = dosTime(mtime);
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  const seen = new Set<string>();
  for (const { name, data, mode = 0o644 } of entries) {
    if (seen.has(name)) throw new Error(`zip: ${name} twice`);
    seen.add(name);
    const fileName = Buffer.from(name, 'utf8');
    const deflated = deflateRawSync(data, { level: 9 });
    const [method, body] = deflated.length < data.length ? [DEFLATE, deflated] : [STORE, data];
    const crc = crc32(data);
    // The fields both headers have, in the same order: from "version needed" to the name's length.
    const fields = (header: Buffer, at: number): Buffer => {
      header.writeUInt16LE(20, at);
      header.writeUInt16LE(UTF8_NAMES, at + 2);
      header.writeUInt16LE(method, at + 4);
      header.writeUInt16LE(time, at + 6);
      header.writeUInt16LE(date, at + 8);
      header.writeUInt32LE(crc, at + 10);
      header.writeUInt32LE(body.length, at + 14);
      header.writeUInt32LE(data.length, at + 18);
      header.writeUInt16LE(fileName.length, at + 22);
      return header;
    };
    const local = fields(Buffer.alloc(30), 4);
    local.writeUInt32LE(0x04034b50, 0);
    const central = fields(Buffer.alloc(46), 6);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(MADE_BY_UNIX, 4);
    central.writeUInt32LE(((0o100000 | mode) << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    locals.push(local, fileName, body);
    centrals.push(central, fileName);
    offset += local.length + fileName.length + body.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}
