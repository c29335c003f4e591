// The chart shapes the adopt tests run on: test/helm/fixtures/charts (the
// shapes the chart tests write) and test/fixtures/helm-create, with adopt's
// arguments for each.

import { fixture } from '../helm/support/shapes.ts';

export interface Shape {
  /** adopt's arguments beside the chart. */
  readonly args?: readonly string[];
  /** Values of the chart for its renders (helm --set-json). */
  readonly set?: Record<string, unknown>;
  readonly source?: string;
  /** The mode adopt is expected to write. */
  readonly mode?: string;
}

export const SHAPES: Record<string, Shape> = {
  aggregated: {},
  'builtin-role': {},
  daemonset: {},
  'memory-limit': {},
  'no-command': { args: ['--command', '/my-operator'] },
  'no-command, native-sidecar': { source: 'no-command', args: ['--mode', 'native-sidecar'], mode: 'native-sidecar' },
  'no-token': { mode: 'native-sidecar' },
  'one-template': {},
  'other-namespaces': {},
  prestop: {},
  'run-as': {},
  statefulset: {},
  'strict-schema': {},
  switches: {},
  'two-operators': {},
  'uninstall-shapes': {},
  'helm create': { source: 'test/fixtures/helm-create', args: ['--command', '/my-operator'] },
};

export const sourceOf = (name: string, shape: Shape): string =>
  shape.source?.includes('/') ? shape.source : fixture(shape.source ?? name);
