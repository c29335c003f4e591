// Durations as the spec accepts them: `500ms`, `30s`, `2m`, `1h`, Go-style
// compounds such as `1m30s`, or a bare number of seconds (`30`, `1.5`).

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h)/y;
const BARE = /^\d+(?:\.\d+)?$/;

/** Upper bound: Node timers cannot wait longer than 2^31-1 ms, and no grace period needs a day. */
export const MAX_DURATION_MS = 24 * 3_600_000;

/** Parses a duration into whole milliseconds, or returns undefined when the text is not one. */
export function parseDuration(text: string): number | undefined {
  const input = text.trim();
  if (input === '') return undefined;
  if (BARE.test(input)) return Math.round(Number(input) * 1000);
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < input.length) {
    const match = PART.exec(input);
    if (!match) return undefined;
    total += Number(match[1]) * UNIT_MS[match[2]!]!;
  }
  return Math.round(total);
}

/** Formats milliseconds the way a user would write them back. */
export function formatDuration(ms: number): string {
  if (ms % 60_000 === 0 && ms >= 60_000) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
