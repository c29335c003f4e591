// DRAINGUARD_* variables that no option reads: most likely misspelt, and then
// silently ignored. drainguard warns, naming the closest known one, as kubectl
// and systemd do for unknown keys; never an error, so a newer manifest does
// not stop an older drainguard.

export interface UnknownVariable {
  readonly name: string;
  /** The closest known variable, when one is close enough to be a typo of it. */
  readonly suggestion?: string;
}

const PREFIX = 'DRAINGUARD_';

export function unknownVariables(env: NodeJS.ProcessEnv, known: ReadonlySet<string>): UnknownVariable[] {
  return Object.keys(env)
    .filter((name) => name.startsWith(PREFIX) && !known.has(name))
    .sort()
    .map((name) => {
      const suggestion = closest(
        name.slice(PREFIX.length),
        [...known].map((k) => k.slice(PREFIX.length)),
      );
      return suggestion === undefined ? { name } : { name, suggestion: PREFIX + suggestion };
    });
}

/** The nearest candidate by edit distance (transpositions count once), if within a third of the name. */
function closest(name: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(name.length / 3)) + 1;
  for (const candidate of candidates) {
    const d = editDistance(name, candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}
