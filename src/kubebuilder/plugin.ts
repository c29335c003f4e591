// drainguard as kubebuilder's external plugin drainguard.dev/v1-alpha: one
// PluginRequest in (kubebuilder v4's pkg/plugin/external types: the command,
// the CLI's flags, the project's files as the "universe", PROJECT as config),
// one PluginResponse out with the files that change. kubebuilder writes every
// file of the answer and deletes none; it reads binary files into the
// universe as text, so the answer holds only the files the plugin changed.
//
// init and edit add config/drainguard (docs/deploy.md) and, where the project
// has helm/v2-alpha's chart, drainguard to the chart (docs/helm.md); create api
// and create webhook change nothing of drainguard's. kubebuilder records the
// plugin in PROJECT's layout when it is given to init, which is what
// `kubebuilder alpha generate` replays.

import type { Change } from '../adopt/edit.ts';
import { DrainguardError, describe } from '../errors.ts';
import { editChart } from './chart.ts';
import { MODES, type Mode, OVERLAY_DIR, layoutComponents, namesComponent, overlayFiles } from './overlay.ts';
import { refuse } from './refusal.ts';

export const PLUGIN_NAME = 'drainguard.dev';
export const PLUGIN_VERSION = 'v1-alpha';
export const PLUGIN_KEY = `${PLUGIN_NAME}/${PLUGIN_VERSION}`;
const API_VERSION = 'v1alpha1';

export interface PluginRequest {
  readonly apiVersion: string;
  readonly command: string;
  readonly args?: readonly string[] | null;
  readonly universe?: Readonly<Record<string, string>> | null;
  readonly pluginChain?: readonly string[] | null;
  readonly config?: Readonly<Record<string, unknown>> | null;
}

/** kubebuilder's external.Flag: its Go fields carry no JSON names. */
interface Flag {
  readonly Name: string;
  readonly Type: 'string' | 'bool' | 'int' | 'float';
  readonly Default: string;
  readonly Usage: string;
}

export interface PluginResponse {
  readonly apiVersion: string;
  readonly command: string;
  readonly metadata: { readonly description?: string; readonly examples?: string };
  readonly universe: Record<string, string>;
  readonly error?: boolean;
  readonly errorMsgs?: string[];
  readonly flags?: Flag[];
}

const FLAGS: Flag[] = [
  {
    Name: 'mode',
    Type: 'string',
    Default: 'wrap',
    Usage: 'how drainguard runs in the manager pod: wrap, native-sidecar or sidecar (docs/deploy.md)',
  },
];

const DESCRIPTION = `Adds drainguard to the project: config/drainguard, an overlay of config/default with drainguard's
kustomize components for the project's layout (cluster- or namespace-scoped; docs/deploy.md), and,
when the project has the chart of helm/v2-alpha, drainguard's library chart in it (docs/helm.md).
Deploy with kubectl apply -k config/drainguard; run kubectl kustomize config/drainguard | drainguard check -.
Run it again after kubebuilder edit --plugins=helm/v2-alpha: that writes the manager's template anew.`;

const EXAMPLES = `  kubebuilder init --plugins=go/v4,${PLUGIN_KEY} --domain example.com
  kubebuilder edit --plugins=${PLUGIN_KEY} --mode native-sidecar
  kubebuilder edit --plugins=helm/v2-alpha,${PLUGIN_KEY}`;

export interface Answer {
  readonly response: PluginResponse;
  /** What the plugin did and did not do, for kubebuilder's user (standard error, which kubebuilder passes through). */
  readonly report: string;
}

/** The answer to one request; a refusal is an answer too (error: true), with nothing written. */
export function answer(request: PluginRequest): Answer {
  const base = { apiVersion: API_VERSION, command: request.command, metadata: {}, universe: {} };
  const args = request.args ?? [];
  try {
    switch (request.command) {
      case 'flags':
        // --mode for init and edit; create api and create webhook take none of drainguard's.
        return { response: { ...base, flags: args.includes('--init') || args.includes('--edit') ? FLAGS : [] }, report: '' };
      case 'metadata':
        return { response: { ...base, metadata: { description: DESCRIPTION, examples: EXAMPLES } }, report: '' };
      case 'init':
      case 'edit': {
        const { files, report } = scaffold(request);
        return { response: { ...base, universe: files }, report };
      }
      case 'create api':
      case 'create webhook':
        return { response: base, report: '' };
      default:
        throw new DrainguardError(
          'DG_KUBEBUILDER_REQUEST',
          `kubebuilder asked for ${JSON.stringify(request.command)}, a command the plugin does not have`,
        );
    }
  } catch (err) {
    const message = `${PLUGIN_KEY}: ${describe(err)}`;
    return { response: { ...base, error: true, errorMsgs: [message] }, report: `${message}\n` };
  }
}

/** The --mode kubebuilder passed on (it passes every --flag of its command line: the others are not drainguard's). */
function modeOf(args: readonly string[]): Mode {
  let given: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg.startsWith('--mode=')) given = arg.slice('--mode='.length);
    else if (arg === '--mode') given = args[i + 1];
  }
  if (given === undefined) return 'wrap';
  if (!(MODES as readonly string[]).includes(given))
    throw new DrainguardError('DG_KUBEBUILDER_REQUEST', `--mode ${JSON.stringify(given)}: expected one of ${MODES.join(', ')}`);
  return given as Mode;
}

function scaffold(request: PluginRequest): { files: Record<string, string>; report: string } {
  const universe = request.universe ?? {};
  const mode = modeOf(request.args ?? []);
  if (universe['config/default/kustomization.yaml'] === undefined)
    throw refuse(
      'config/default/kustomization.yaml is not there: the plugin adds drainguard on top of the kustomize config of go/v4 ' +
        `(kubebuilder init --plugins=go/v4,${PLUGIN_KEY})`,
    );
  const namespaced = isNamespaced(universe, request.config ?? {});
  const changes: Change[] = [];
  const untouched: string[] = [];
  const files: Record<string, string> = {};
  const overlay = overlayFiles({ namespaced, mode, managerManifest: universe['config/manager/manager.yaml'] });
  const kustomization = `${OVERLAY_DIR}/kustomization.yaml`;
  const existing = universe[kustomization];
  if (existing === undefined) {
    for (const [path, text] of Object.entries(overlay)) {
      if (universe[path] === undefined) files[path] = text;
      else untouched.push(`${path} is there already: kept as it is`);
    }
    changes.push({
      mark: '+',
      path: OVERLAY_DIR,
      what: `${namespaced ? 'namespace' : 'cluster'}-scoped layout, ${mode} mode (docs/deploy.md)`,
    });
  } else {
    const { needed, wrong } = layoutComponents(namespaced);
    if (namesComponent(existing, wrong) && !namesComponent(existing, needed))
      throw refuse(
        `${kustomization} names the ${wrong} component, and the project is ${namespaced ? 'namespace' : 'cluster'}-scoped ` +
          `(PROJECT, config/rbac/role.yaml): put ${needed} in its place (docs/deploy.md, "A namespace-scoped project")`,
      );
    const differs = existing === overlay[kustomization] ? '' : ' (it differs from what the plugin writes)';
    untouched.push(`${kustomization} is there already: kept as it is${differs}`);
  }
  const chart = chartDir(universe, request.config ?? {});
  if (chart) {
    const edit = editChart(universe, chart, mode);
    Object.assign(files, edit.files);
    changes.push(...edit.changes);
    untouched.push(...edit.untouched);
    if (Object.keys(edit.files).length > 0)
      untouched.push(`then: helm dependency update ${chart} (fetches drainguard's library chart into ${chart}/charts/)`);
  } else {
    untouched.push(
      'no chart of helm/v2-alpha: run kubebuilder edit --plugins=helm/v2-alpha,' + `${PLUGIN_KEY} to have one with drainguard`,
    );
  }
  const lines = [`${PLUGIN_KEY} (${request.command}):`];
  const wrote = Object.keys(files).length > 0;
  lines.push(wrote ? 'changed:' : 'nothing to change: the project has drainguard already');
  if (wrote) for (const c of changes) lines.push(`  ${c.mark} ${c.path}: ${c.what}`);
  lines.push('not changed:', ...untouched.map((u) => `  = ${u}`));
  lines.push(`check it: kubectl kustomize ${OVERLAY_DIR} | drainguard check -`);
  return { files, report: `${lines.join('\n')}\n` };
}

/**
 * Whether the manager's RBAC is namespaced: config/rbac/role.yaml's kind says
 * what kustomize will render (kubebuilder edit --namespaced rewrites it), and
 * PROJECT's namespaced where there is no role.yaml yet.
 */
function isNamespaced(universe: Readonly<Record<string, string>>, config: Readonly<Record<string, unknown>>): boolean {
  const role = universe['config/rbac/role.yaml'];
  const kind = role === undefined ? undefined : /^kind:\s*(\w+)\s*$/m.exec(role)?.[1];
  if (kind === 'Role') return true;
  if (kind === 'ClusterRole') return false;
  return config.namespaced === true;
}

/** helm/v2-alpha's chart: OUTPUT/chart, OUTPUT as PROJECT records it (dist). */
function chartDir(universe: Readonly<Record<string, string>>, config: Readonly<Record<string, unknown>>): string | undefined {
  const plugins = (config.plugins ?? {}) as Record<string, { output?: unknown } | undefined>;
  const output = plugins['helm.kubebuilder.io/v2-alpha']?.output;
  const chart = `${typeof output === 'string' && output !== '' ? output.replace(/\/+$/, '') : 'dist'}/chart`;
  return universe[`${chart}/Chart.yaml`] === undefined ? undefined : chart;
}
