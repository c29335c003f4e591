// Naming resources as kubectl does: TYPE[.VERSION][.GROUP][/NAME], where TYPE is
// a plural, a singular, a kind or a short name, resolved through discovery.

import { ConfigError, DrainguardError } from '../errors.ts';
import type { KubeClient } from '../kube/client.ts';
import { KubeApiError } from '../kube/errors.ts';
import type { ResourceRef } from '../kube/objects.ts';
import { versionsOf } from '../kube/discovery.ts';

export interface ResourceArg {
  /** As the user wrote it, for messages. */
  readonly text: string;
  readonly type: string;
  /** Everything after the first dot of TYPE: GROUP, or VERSION.GROUP. */
  readonly qualifier?: string;
  readonly name?: string;
}

export interface Target {
  readonly text: string;
  readonly resource: ResourceRef;
  readonly name?: string;
}

const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** Parses one RESOURCE argument; a comma joins several types (`a,b` or `a,b/name` is not kubectl's either). */
export function parseResourceArgs(argument: string): ResourceArg[] {
  return argument.split(',').map((text) => {
    const trimmed = text.trim();
    const slash = trimmed.indexOf('/');
    const typePart = slash === -1 ? trimmed : trimmed.slice(0, slash);
    const name = slash === -1 ? undefined : trimmed.slice(slash + 1);
    if (typePart === '' || !/^[a-zA-Z0-9][-a-zA-Z0-9.]*$/.test(typePart)) {
      throw new ConfigError(
        'DG_PREDELETE_RESOURCE',
        `RESOURCE: expected TYPE[.GROUP][/NAME] such as installations.operator.tigera.io/default, got ${JSON.stringify(text)}`,
      );
    }
    if (name !== undefined && !NAME.test(name))
      throw new ConfigError('DG_PREDELETE_RESOURCE', `RESOURCE: expected an object name after "/" in ${JSON.stringify(text)}`);
    const dot = typePart.indexOf('.');
    return {
      text: trimmed,
      type: (dot === -1 ? typePart : typePart.slice(0, dot)).toLowerCase(),
      qualifier: dot === -1 ? undefined : typePart.slice(dot + 1).toLowerCase(),
      name,
    };
  });
}

interface ApiResource {
  name: string;
  singularName?: string;
  namespaced: boolean;
  kind: string;
  verbs?: string[];
  shortNames?: string[];
}

interface Discovered extends ResourceRef {
  readonly names: readonly string[];
}

/** A group whose resources could not be read: an aggregated API that is down, a CRD deleted between the two reads. */
interface Unread {
  readonly group: string;
  readonly version: string;
  readonly error: string;
}

interface Discoveries {
  readonly found: readonly Discovered[];
  readonly unread: readonly Unread[];
}

/**
 * Discovery, read once per run: every group's preferred version and its resources. As kubectl,
 * a group whose resources cannot be read is left out with a warning (`onUnread`), not the end
 * of the run: one aggregated API that is down must not stop an uninstall whose types are
 * elsewhere.
 */
export class Discovery {
  readonly #client: KubeClient;
  readonly #onUnread: (groupVersion: string, error: string) => void;
  #all?: Promise<Discoveries>;

  constructor(client: KubeClient, onUnread: (groupVersion: string, error: string) => void = () => {}) {
    this.#client = client;
    this.#onUnread = onUnread;
  }

  async resolve(arg: ResourceArg): Promise<Target> {
    const { found: all, unread } = await (this.#all ??= this.#load());
    const matches = all.filter((r) => r.names.includes(arg.type) && qualifies(r, arg.qualifier));
    const groups = [...new Set(matches.map((r) => r.group))];
    const mayHold = unread.filter((u) => qualifies(u, arg.qualifier));
    if (matches.length === 0 && mayHold.length > 0) {
      // Not a usage error: the type may well be there, in a group that could not be read this time.
      throw new DrainguardError(
        'DG_PREDELETE_DISCOVERY',
        `RESOURCE: the API server at ${this.#client.server} has no resource type ${JSON.stringify(typeText(arg))} ` +
          `in the groups it could read, and could not read ${mayHold.map((u) => `${u.group}/${u.version} (${u.error})`).join(', ')}`,
      );
    }
    if (matches.length === 0) {
      const near = all.filter((r) => r.names.includes(arg.type)).map((r) => `${r.resource}.${r.group || 'core'}`);
      throw new ConfigError(
        'DG_PREDELETE_RESOURCE',
        `RESOURCE: the API server at ${this.#client.server} has no resource type ` +
          `${JSON.stringify(typeText(arg))}` +
          (near.length > 0 ? ` (in other groups: ${near.join(', ')})` : ' (is its CustomResourceDefinition installed?)'),
      );
    }
    if (groups.length > 1 && !groups.includes('')) {
      throw new ConfigError(
        'DG_PREDELETE_RESOURCE',
        `RESOURCE: ${JSON.stringify(arg.text)} is ambiguous: ${[...new Set(matches.map((r) => `${r.resource}.${r.group}`))].join(', ')}; ` +
          'name the group',
      );
    }
    // As kubectl: a core type wins over one of the same name in another group.
    const resource = matches.find((r) => r.group === '') ?? matches[0]!;
    return { text: arg.text, resource, name: arg.name };
  }

  async #load(): Promise<Discoveries> {
    const core = this.#client.request<{ resources: ApiResource[] }>('GET', '/api/v1', { what: 'discovery of the core API' });
    const groups = await this.#client.request<{
      groups: { name: string; preferredVersion?: { version: string }; versions: { version: string }[] }[];
    }>('GET', '/apis', { what: 'discovery of API groups' });
    // Every version of each group, the preferred one first: a group may serve a type only in a
    // version it does not prefer (External Secrets' PushSecret); the first version that has it wins.
    const lists = await Promise.all(
      groups.groups
        .flatMap((g) => versionsOf(g).map((version) => ({ g, version })))
        .map(async ({ g, version }) => {
          try {
            const list = await this.#client.request<{ resources: ApiResource[] }>('GET', `/apis/${g.name}/${version}`, {
              what: `discovery of ${g.name}/${version}`,
            });
            return toDiscovered(g.name, version, list.resources);
          } catch (err) {
            // An answer that says no (404, 503): that group is left out. No answer at all ends the run.
            if (!(err instanceof KubeApiError)) throw err;
            const error = err.answer.trim();
            this.#onUnread(`${g.name}/${version}`, error);
            return { group: g.name, version, error };
          }
        }),
    );
    const found = lists.filter((l): l is Discovered[] => Array.isArray(l)).flat();
    const unread = lists.filter((l): l is Unread => !Array.isArray(l));
    return { found: [...toDiscovered('', 'v1', (await core).resources), ...found], unread };
  }
}

function toDiscovered(group: string, version: string, resources: ApiResource[]): Discovered[] {
  return resources
    .filter((r) => !r.name.includes('/')) // subresources such as pods/status
    .map((r) => ({
      group,
      version,
      resource: r.name,
      kind: r.kind,
      namespaced: r.namespaced,
      names: [r.name, r.singularName || r.kind.toLowerCase(), r.kind.toLowerCase(), ...(r.shortNames ?? [])],
    }));
}

const typeText = (arg: ResourceArg): string => arg.type + (arg.qualifier ? `.${arg.qualifier}` : '');

/** `qualifier` is GROUP or VERSION.GROUP, and a prefix of the group is not enough (as kubectl). */
function qualifies(r: { readonly group: string; readonly version: string }, qualifier: string | undefined): boolean {
  if (qualifier === undefined) return true;
  if (qualifier === r.group) return true;
  return qualifier === `${r.version}.${r.group}` || (r.group === '' && qualifier === r.version);
}
