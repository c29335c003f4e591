// Request bodies in Kubernetes' protobuf encoding, for the few kinds clients
// send that way here: client-go's typed clients do, and helm writes its
// release records (Secrets) and deletes them (DeleteOptions) with one.
// The envelope is `k8s\0` + runtime.Unknown; the messages follow
// k8s.io/api/core/v1 and apimachinery's generated.proto. Any other kind is
// refused with 415, naming it.

import { ApiError } from './errors.ts';

const MAGIC = Buffer.from('k8s\0', 'latin1');

type Field = { name: string; type: 'string' | 'bytes' | 'int' | 'bool' | 'time' | 'message' | 'stringMap' | 'bytesMap'; repeated?: boolean; message?: Schema };
type Schema = Record<number, Field>;

const TIME: Schema = { 1: { name: 'seconds', type: 'int' }, 2: { name: 'nanos', type: 'int' } };
const OWNER: Schema = {
  1: { name: 'kind', type: 'string' },
  3: { name: 'name', type: 'string' },
  4: { name: 'uid', type: 'string' },
  5: { name: 'apiVersion', type: 'string' },
  6: { name: 'controller', type: 'bool' },
  7: { name: 'blockOwnerDeletion', type: 'bool' },
};
const META: Schema = {
  1: { name: 'name', type: 'string' },
  2: { name: 'generateName', type: 'string' },
  3: { name: 'namespace', type: 'string' },
  5: { name: 'uid', type: 'string' },
  6: { name: 'resourceVersion', type: 'string' },
  7: { name: 'generation', type: 'int' },
  8: { name: 'creationTimestamp', type: 'time' },
  9: { name: 'deletionTimestamp', type: 'time' },
  10: { name: 'deletionGracePeriodSeconds', type: 'int' },
  11: { name: 'labels', type: 'stringMap' },
  12: { name: 'annotations', type: 'stringMap' },
  13: { name: 'ownerReferences', type: 'message', repeated: true, message: OWNER },
  14: { name: 'finalizers', type: 'string', repeated: true },
};
const KINDS: Record<string, Schema> = {
  'v1/Secret': { 1: { name: 'metadata', type: 'message', message: META }, 2: { name: 'data', type: 'bytesMap' }, 3: { name: 'type', type: 'string' }, 4: { name: 'stringData', type: 'stringMap' }, 5: { name: 'immutable', type: 'bool' } },
  'v1/ConfigMap': { 1: { name: 'metadata', type: 'message', message: META }, 2: { name: 'data', type: 'stringMap' }, 3: { name: 'binaryData', type: 'bytesMap' }, 4: { name: 'immutable', type: 'bool' } },
  'v1/DeleteOptions': {
    1: { name: 'gracePeriodSeconds', type: 'int' },
    2: { name: 'preconditions', type: 'message', message: { 1: { name: 'uid', type: 'string' }, 2: { name: 'resourceVersion', type: 'string' } } },
    3: { name: 'orphanDependents', type: 'bool' },
    4: { name: 'propagationPolicy', type: 'string' },
    5: { name: 'dryRun', type: 'string', repeated: true },
  },
};
const UNKNOWN: Schema = { 1: { name: 'typeMeta', type: 'message', message: { 1: { name: 'apiVersion', type: 'string' }, 2: { name: 'kind', type: 'string' } } }, 2: { name: 'raw', type: 'bytes' } };

class Reader {
  pos = 0;
  readonly buf: Buffer;
  constructor(buf: Buffer) {
    this.buf = buf;
  }
  get done(): boolean {
    return this.pos >= this.buf.length;
  }
  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (this.pos >= this.buf.length) throw new ApiError(400, 'the protobuf body is truncated');
      const b = this.buf[this.pos++]!;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  }
  bytes(): Buffer {
    const n = Number(this.varint());
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.bytes();
    else if (wire === 5) this.pos += 4;
    else throw new ApiError(400, `unsupported protobuf wire type ${wire}`);
  }
}

function decode(buf: Buffer, schema: Schema): Record<string, any> {
  const r = new Reader(buf);
  const out: Record<string, any> = {};
  while (!r.done) {
    const tag = Number(r.varint());
    const [num, wire] = [tag >> 3, tag & 7];
    const f = schema[num];
    if (!f) {
      r.skip(wire);
      continue;
    }
    let value: unknown;
    switch (f.type) {
      case 'string':
        value = r.bytes().toString('utf8');
        break;
      case 'bytes':
        value = r.bytes();
        break;
      case 'int':
        value = Number(BigInt.asIntN(64, r.varint()));
        break;
      case 'bool':
        value = r.varint() !== 0n;
        break;
      case 'time': {
        const t = decode(r.bytes(), TIME);
        value = new Date((t.seconds ?? 0) * 1000).toISOString().replace('.000Z', 'Z');
        break;
      }
      case 'message':
        value = decode(r.bytes(), f.message!);
        break;
      case 'stringMap':
      case 'bytesMap': {
        const entry = decode(r.bytes(), { 1: { name: 'k', type: 'string' }, 2: { name: 'v', type: f.type === 'bytesMap' ? 'bytes' : 'string' } });
        out[f.name] ??= {};
        out[f.name][entry.k ?? ''] = f.type === 'bytesMap' ? Buffer.from(entry.v ?? []).toString('base64') : (entry.v ?? '');
        continue;
      }
    }
    if (f.repeated) (out[f.name] ??= []).push(value);
    else out[f.name] = value;
  }
  return out;
}

export const isProtobuf = (contentType: string): boolean => contentType === 'application/vnd.kubernetes.protobuf';

/** The JSON form of a protobuf-encoded object. */
export function decodeProtobuf(body: Buffer): unknown {
  if (!body.subarray(0, 4).equals(MAGIC)) throw new ApiError(400, 'the protobuf body does not start with the k8s envelope');
  const unknown = decode(body.subarray(4), UNKNOWN);
  const apiVersion = unknown.typeMeta?.apiVersion ?? '';
  const kind = unknown.typeMeta?.kind ?? '';
  const schema = KINDS[`${apiVersion}/${kind}`];
  if (!schema) throw new ApiError(415, `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (this API server decodes protobuf only for ${Object.keys(KINDS).join(', ')}, not ${apiVersion}/${kind})`);
  return { apiVersion, kind, ...decode(unknown.raw ?? Buffer.alloc(0), schema) };
}
