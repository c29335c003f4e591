// A strict reader of the Prometheus text exposition format (version 0.0.4):
// every line must be a comment, HELP, TYPE or a sample, or reading fails.

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Exposition {
  readonly samples: readonly Sample[];
  readonly help: ReadonlyMap<string, string>;
  readonly type: ReadonlyMap<string, string>;
  /** The value of the one sample with this name and these labels (all of them); undefined when missing. */
  value(name: string, labels?: Record<string, string>): number | undefined;
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})?\\s+(\\S+)(?:\\s+-?\\d+)?$`);
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)/y;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const help = new Map<string, string>();
  const type = new Map<string, string>();
  text.split('\n').forEach((line, i) => {
    const where = `line ${i + 1}: ${JSON.stringify(line)}`;
    if (line === '') return;
    const meta = new RegExp(`^# (HELP|TYPE) (${NAME}) (.*)$`).exec(line);
    if (meta) {
      if (meta[1] === 'TYPE' && !TYPES.has(meta[3]!)) throw new Error(`unknown type at ${where}`);
      (meta[1] === 'HELP' ? help : type).set(meta[2]!, meta[3]!);
      return;
    }
    if (line.startsWith('#')) return;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a sample at ${where}`);
    const labels: Record<string, string> = {};
    if (m[2]) {
      LABEL.lastIndex = 0;
      while (LABEL.lastIndex < m[2].length) {
        const l = LABEL.exec(m[2]);
        if (!l) throw new Error(`bad labels at ${where}`);
        labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
      }
    }
    // As Prometheus reads values (Go's strconv.ParseFloat): NaN and Inf in any case.
    const raw = m[3]!;
    const special = /^([+-]?)(inf|infinity|nan)$/i.exec(raw);
    const value = special ? (special[2]!.toLowerCase() === 'nan' ? NaN : special[1] === '-' ? -Infinity : Infinity) : Number(raw);
    if (Number.isNaN(value) && !special) throw new Error(`bad value at ${where}`);
    samples.push({ name: m[1]!, labels, value });
  });
  return {
    samples,
    help,
    type,
    value(name, want = {}) {
      const found = samples.filter(
        (s) =>
          s.name === name &&
          Object.keys(want).length === Object.keys(s.labels).length &&
          Object.entries(want).every(([k, v]) => s.labels[k] === v),
      );
      if (found.length > 1) throw new Error(`${found.length} samples ${name} ${JSON.stringify(want)}`);
      return found[0]?.value;
    },
  };
}
