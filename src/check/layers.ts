// Which of drainguard's layers covers which way of uninstalling, for the
// manifests `drainguard check` read: the pre-delete hook (Helm runs it, nothing
// else does), the hold (a background deletion of the Deployment), the guard
// (the RBAC kept while the pod drains). The README's table is generated from WAYS.

export const LAYERS = ['hook', 'hold', 'guard'] as const;
export type Layer = (typeof LAYERS)[number];

export const LAYER_NAMES: Record<Layer, string> = { hook: 'pre-delete hook', hold: 'hold', guard: 'guard' };

export interface Way {
  readonly way: string;
  readonly covers: Readonly<Record<Layer, boolean>>;
  /** Why a layer does not cover it. */
  readonly note?: string;
}

export const WAYS: readonly Way[] = [
  { way: 'helm uninstall', covers: { hook: true, hold: true, guard: true } },
  { way: 'helm uninstall --no-hooks', covers: { hook: false, hold: true, guard: true }, note: 'no hooks run' },
  {
    way: 'kubectl delete -f / -k, Flux prune',
    covers: { hook: false, hold: true, guard: true },
    note: "Helm's hooks are not run; background propagation (kubectl's default) lets the hold keep the pods",
  },
  {
    way: 'Argo CD prune',
    covers: { hook: false, hold: false, guard: true },
    note:
      'foreground propagation by default deletes the pods first: ' +
      'the hold warns and lets go (sync option PrunePropagationPolicy=background makes it hold)',
  },
  {
    way: 'namespace deletion',
    covers: { hook: false, hold: false, guard: true },
    note: 'the namespace controller deletes the pods directly: nothing holds them',
  },
];

/** A cell: the layer covers the way, does not, or is not configured (off). */
export type Cover = 'yes' | 'no' | 'off';

export interface LayersRow {
  readonly way: string;
  readonly hook: Cover;
  readonly hold: Cover;
  readonly guard: Cover;
  /** The running operator finalizes the custom resources: the hook or the hold covers it. */
  readonly finalized: boolean;
}

export type Configured = Readonly<Record<Layer, boolean>>;

export function layersTable(configured: Configured): LayersRow[] {
  const cell = (w: Way, l: Layer): Cover => (!configured[l] ? 'off' : w.covers[l] ? 'yes' : 'no');
  return WAYS.map((w) => ({
    way: w.way,
    hook: cell(w, 'hook'),
    hold: cell(w, 'hold'),
    guard: cell(w, 'guard'),
    finalized: (configured.hook && w.covers.hook) || (configured.hold && w.covers.hold),
  }));
}

const FINALIZED = 'custom resources finalized';

/** The table as text, columns aligned. */
export function formatLayers(rows: readonly LayersRow[]): string {
  const header = ['uninstalled by', ...LAYERS.map((l) => LAYER_NAMES[l]), FINALIZED];
  const lines = [header, ...rows.map((r) => [r.way, r.hook, r.hold, r.guard, r.finalized ? 'yes' : 'no'])];
  const widths = header.map((_, i) => Math.max(...lines.map((l) => l[i]!.length)));
  return lines.map((l) => l.map((c, i) => (i === l.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n');
}

/** The README's table: what each layer covers when it is configured. */
export function layersMarkdown(ways: readonly Way[] = WAYS): string {
  const rows = ways.map(
    (w) =>
      `| ${w.way} | ${LAYERS.map((l) => (w.covers[l] ? 'yes' : 'no')).join(' | ')} | ` +
      `${w.covers.hook || w.covers.hold ? 'yes' : 'no'} | ${w.note ?? ''} |`,
  );
  return [
    `| uninstalled by | ${LAYERS.map((l) => LAYER_NAMES[l]).join(' | ')} | ${FINALIZED} | notes |`,
    '|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}
