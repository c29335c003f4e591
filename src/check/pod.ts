// Where drainguard is in a pod template, in which mode, and with what settings
// as the kubelet would give them (env values, the downward API, $(VAR) expanded).

import type { Manifest } from './finding.ts';
import { OPTIONS } from '../config/options.ts';

export interface Container {
  readonly name: string;
  readonly image?: string;
  readonly command?: readonly string[];
  readonly args?: readonly string[];
  readonly env?: readonly { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  /** ConfigMaps and Secrets whose keys become variables: names check cannot see. */
  readonly envFrom?: readonly unknown[];
  readonly volumeMounts?: readonly { name: string; mountPath: string; readOnly?: boolean }[];
  readonly ports?: readonly { name?: string; containerPort: number; protocol?: string }[];
  readonly securityContext?: { runAsUser?: number; runAsGroup?: number; readOnlyRootFilesystem?: boolean };
  readonly lifecycle?: { preStop?: Handler; postStart?: Handler; stopSignal?: string };
  readonly resources?: { requests?: { memory?: string | number }; limits?: { memory?: string | number } };
  readonly restartPolicy?: string;
}

/** A lifecycle hook's handler: the API server takes exactly one of its actions. */
export interface Handler {
  readonly exec?: { command?: readonly string[] };
  readonly httpGet?: { path?: string };
  readonly tcpSocket?: unknown;
  readonly sleep?: { seconds?: number };
}

export interface PodSpec {
  readonly containers: readonly Container[];
  readonly initContainers?: readonly Container[];
  readonly volumes?: readonly {
    name: string;
    emptyDir?: unknown;
    projected?: { sources?: readonly { serviceAccountToken?: unknown }[] };
  }[];
  readonly automountServiceAccountToken?: boolean;
  readonly terminationGracePeriodSeconds?: number;
  readonly os?: { name?: string };
  readonly serviceAccountName?: string;
  readonly securityContext?: { runAsUser?: number; runAsGroup?: number };
  readonly nodeSelector?: Record<string, string>;
  readonly affinity?: any;
}

export type Mode = 'wrap' | 'native-sidecar' | 'sidecar';

export interface Placement {
  readonly mode: Mode;
  /** The container that runs `drainguard run` or `drainguard sidecar`: it holds the guard. */
  readonly supervisor: Container;
  /** The operator's container: the wrapped one, or the one the sidecar drains. */
  readonly operator: Container | undefined;
}

/** The pod a manifest runs: a Pod's own, else its pod template, of any kind that has one (built-in or custom). */
export function podSpecOf(o: Manifest): PodSpec | undefined {
  if (o.kind === 'Pod') return o.spec as PodSpec;
  // A CronJob's pods come from its Job template; every other kind keeps it at spec.template (an Argo Rollout too).
  const template = o.kind === 'CronJob' ? o.spec?.jobTemplate?.spec?.template : o.spec?.template;
  return Array.isArray(template?.spec?.containers) ? (template.spec as PodSpec) : undefined;
}

const argv = (c: Container): string[] => [...(c.command ?? []), ...(c.args ?? [])];
const isDrainguard = (word: string | undefined): boolean => word !== undefined && /(^|\/)drainguard$/.test(word);

/** drainguard's subcommand in this container, or undefined when it does not run drainguard. */
export function drainguardCommand(c: Container): string | undefined {
  const words = argv(c);
  if (isDrainguard(words[0])) return words[1];
  // The drainguard image's entrypoint is drainguard itself: args alone name the command.
  if (c.command === undefined && c.image?.includes('/drainguard:') && c.args?.length) return c.args[0];
  return undefined;
}

export function placementOf(pod: PodSpec): Placement | undefined {
  const wrap = pod.containers.find((c) => drainguardCommand(c) === 'run');
  if (wrap) return { mode: 'wrap', supervisor: wrap, operator: wrap };
  const native = (pod.initContainers ?? []).find((c) => drainguardCommand(c) === 'sidecar');
  const plain = pod.containers.find((c) => drainguardCommand(c) === 'sidecar');
  const supervisor = native ?? plain;
  if (!supervisor) return undefined;
  const mode: Mode = native ? (native.restartPolicy === 'Always' ? 'native-sidecar' : 'sidecar') : 'sidecar';
  const named = envOf(supervisor, {}).DRAINGUARD_OPERATOR_CONTAINER?.split(',')[0];
  const others = pod.containers.filter((c) => c !== supervisor);
  const operator = others.find((c) => c.name === named) ?? others.find((c) => c.lifecycle?.preStop) ?? others[0];
  return { mode, supervisor, operator };
}

/** The container's environment as the kubelet resolves it; fieldRefs become placeholders that name the field. */
export function envOf(c: Container, fields: Record<string, string>): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const e of c.env ?? []) {
    if (e.valueFrom)
      out[e.name] = e.valueFrom.fieldRef ? (fields[e.valueFrom.fieldRef.fieldPath] ?? `<${e.valueFrom.fieldRef.fieldPath}>`) : undefined;
    else out[e.name] = (e.value ?? '').replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) => out[name] ?? whole);
  }
  return out;
}

/** The operator's own command line: what `drainguard run` starts (after `--`, or its first word that is no option), or its container's. */
export function operatorArgv({ mode, supervisor, operator }: Placement): string[] {
  if (mode !== 'wrap') return operator ? argv(operator) : [];
  const words = argv(supervisor);
  const end = words.indexOf('--');
  if (end !== -1) return words.slice(end + 1);
  for (let i = words.indexOf('run') + 1; i < words.length; i++) {
    const w = words[i]!;
    if (!w.startsWith('-')) return words.slice(i);
    // An option written apart from its value (--stop-timeout 5s) takes the next word.
    if (!w.includes('=') && TAKES_VALUE.has(w)) i++;
  }
  return [];
}

/** The flags of drainguard run that take a value. */
const TAKES_VALUE: ReadonlySet<string> = new Set(
  OPTIONS.filter((o) => o.value !== undefined && o.commands.includes('run')).flatMap((o) => [
    `--${o.flag}`,
    ...(o.short ? [`-${o.short}`] : []),
  ]),
);

/** The value of a Go flag (-NAME V, -NAME=V, and the same with --), as Go's flag package reads it; the last one wins. */
export function goFlagOf(words: readonly string[], name: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    if (w === '--') break;
    const bare = w.replace(/^--?/, '');
    if (bare === w) continue;
    if (bare === name) value = words[i + 1];
    else if (bare.startsWith(`${name}=`)) value = bare.slice(name.length + 1);
  }
  return value;
}

/** The value of --FLAG=V or --FLAG V in the container's arguments. */
export function flagOf(c: Container, flag: string): string | undefined {
  const words = argv(c);
  for (let i = 0; i < words.length; i++) {
    if (words[i] === '--') break;
    if (words[i] === `--${flag}`) return words[i + 1];
    if (words[i]!.startsWith(`--${flag}=`)) return words[i]!.slice(flag.length + 3);
  }
  return undefined;
}

/** A setting of drainguard in this container: flag first, then variable, as drainguard reads them. */
export function settingOf(c: Container, flag: string): string | undefined {
  return flagOf(c, flag) ?? envOf(c, {})[`DRAINGUARD_${flag.toUpperCase().replaceAll('-', '_')}`];
}

export function mountFor(c: Container | undefined, path: string): { name: string; mountPath: string } | undefined {
  // The deepest mount that holds PATH.
  return [...(c?.volumeMounts ?? [])]
    .filter((m) => path === m.mountPath || path.startsWith(`${m.mountPath.replace(/\/$/, '')}/`))
    .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
}

export const userOf = (c: Container | undefined, pod: PodSpec): number | undefined =>
  c?.securityContext?.runAsUser ?? pod.securityContext?.runAsUser;
export const groupOf = (c: Container | undefined, pod: PodSpec): number | undefined =>
  c?.securityContext?.runAsGroup ?? pod.securityContext?.runAsGroup;
