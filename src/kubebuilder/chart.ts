// drainguard in the chart kubebuilder's helm/v2-alpha plugin writes
// (OUTPUT/chart): docs/helm.md's four edits, made by drainguard adopt's own
// edits (src/adopt/edit.ts) in a copy of the chart's files, and what differs
// handed back. The chart's shape is kubebuilder's, so nothing is rendered:
// the Deployment is templates/manager/manager.yaml, the RBAC that binds the
// manager is in templates/rbac/ under the names kubebuilder gives it.
//
// kubebuilder writes the files a plugin hands back and deletes none, so the
// Deployment cannot be renamed to its partial: manager.yaml keeps a template
// that renders nothing (MANAGER_STUB). When helm/v2-alpha writes manager.yaml
// anew (it always regenerates it), the next run takes the new Deployment into
// the partial again.

import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { parse } from 'yaml';
import { type Change, addAllTemplate, addDependency, addNotes, addValues, allowInSchema, readChart } from '../adopt/edit.ts';
import type { Mode, Plan } from '../adopt/plan.ts';
import { VERSION } from '../version.ts';
import { refuse } from './refusal.ts';

const MANAGER = 'templates/manager/manager.yaml';
const PARTIAL = 'templates/manager/_manager.yaml';
export const MANAGER_STUB =
  "{{- /* drainguard (kubebuilder edit --plugins=drainguard.dev/v1-alpha): the manager's Deployment is " +
  'manager/_manager.yaml, rendered with drainguard by templates/drainguard.yaml. */ -}}\n';

/**
 * The RBAC templates that bind the manager's ServiceAccount, in docs/helm.md's
 * order: kubebuilder v4.12 and later's names, then the older ones.
 */
const RBAC_TEMPLATES = [
  ['controller-manager.yaml', 'service_account.yaml'],
  ['manager-role.yaml', 'role.yaml'],
  ['manager-rolebinding.yaml', 'role_binding.yaml'],
  ['leader-election-role.yaml', 'leader_election_role.yaml'],
  ['leader-election-rolebinding.yaml', 'leader_election_role_binding.yaml'],
  ['metrics-auth-role.yaml', 'metrics_auth_role.yaml'],
  ['metrics-auth-rolebinding.yaml', 'metrics_auth_role_binding.yaml'],
] as const;

export interface ChartEdit {
  /** The files that change, by path from the project's root. */
  readonly files: Record<string, string>;
  readonly changes: readonly Change[];
  readonly untouched: readonly string[];
}

/** CHART (a path from the project's root) of UNIVERSE with drainguard added in MODE; refused when its shape is not kubebuilder's. */
export function editChart(universe: Readonly<Record<string, string>>, chart: string, mode: Mode): ChartEdit {
  const prefix = `${chart}/`;
  const own = Object.entries(universe).filter(([path]) => path.startsWith(prefix));
  const work = mkdtempSync(join(tmpdir(), 'drainguard-kubebuilder-'));
  try {
    for (const [path, text] of own) {
      mkdirSync(dirname(join(work, path.slice(prefix.length))), { recursive: true });
      writeFileSync(join(work, path.slice(prefix.length)), text);
    }
    const changes: Change[] = [];
    const untouched: string[] = [];
    const { dependsOnLibrary } = readChart(work);
    if (!dependsOnLibrary) changes.push(...addDependency(work, VERSION));
    changes.push(...takeManager(work, chart, untouched));
    changes.push(...addAllTemplate(work));
    const values = parse(readFileSync(join(work, 'values.yaml'), 'utf8')) as Record<string, unknown> | null;
    if (values && Object.hasOwn(values, 'drainguard'))
      untouched.push(`${chart}/values.yaml has drainguard's settings already: the plugin changes none of them`);
    else changes.push(...addValues(work, planFor(work, chart, mode)));
    changes.push(...allowInSchema(work), ...addNotes(work));
    const files: Record<string, string> = {};
    for (const path of filesOf(work)) {
      const text = readFileSync(join(work, path), 'utf8');
      if (universe[`${prefix}${path}`] !== text) files[`${prefix}${path}`] = text;
    }
    return {
      files,
      changes: changes.map((c) => ({
        ...c,
        path: c.path
          .split(' -> ')
          .map((p) => `${prefix}${p}`)
          .join(' -> '),
      })),
      untouched,
    };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The Deployment into the partial: on the first run, and after helm/v2-alpha wrote manager.yaml anew. */
function takeManager(work: string, chart: string, untouched: string[]): Change[] {
  const read = (path: string): string | undefined => {
    try {
      return readFileSync(join(work, path), 'utf8');
    } catch {
      return undefined;
    }
  };
  const manager = read(MANAGER);
  const partial = read(PARTIAL);
  if (manager === MANAGER_STUB || (manager === undefined && partial !== undefined)) return [];
  if (manager === undefined || !/^kind:\s*Deployment\s*$/m.test(manager))
    throw refuse(
      `${chart}/${MANAGER}: ${manager === undefined ? 'not there' : 'holds no Deployment'}: ` +
        `not the chart kubebuilder's helm/v2-alpha writes; add drainguard to it by docs/helm.md's steps`,
    );
  writeFileSync(join(work, PARTIAL), manager);
  writeFileSync(join(work, MANAGER), MANAGER_STUB);
  if (partial !== undefined) untouched.push(`${chart}/${PARTIAL} replaced by the Deployment helm/v2-alpha wrote anew into ${MANAGER}`);
  return [
    {
      mark: '>',
      path: `${MANAGER} -> ${PARTIAL}`,
      what: `the manager's Deployment: a partial, which drainguard.all renders with drainguard added; ${MANAGER} renders nothing`,
    },
  ];
}

function planFor(work: string, chart: string, mode: Mode): Plan {
  const present = new Set(readdirSync(join(work, 'templates/rbac'), { withFileTypes: true }).map((e) => e.name));
  const guardTemplates = RBAC_TEMPLATES.flatMap((names) => names.filter((n) => present.has(n)).map((n) => `rbac/${n}`));
  const binds = ['manager-rolebinding.yaml', 'role_binding.yaml'].some((n) => present.has(n));
  if (!binds)
    throw refuse(
      `${chart}/templates/rbac/ has no manager-rolebinding.yaml (nor role_binding.yaml): ` +
        'name the templates that bind the manager in drainguard.guard.templates by hand (docs/helm.md, step 4)',
    );
  return {
    operators: [{ kind: 'Deployment', name: 'controller-manager', file: 'manager/manager.yaml', mode }],
    guardTemplates,
    untouched: [],
  };
}

function filesOf(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => !e.isDirectory())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}
