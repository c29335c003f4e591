// The namespace's custom resources finalized before the drain (finalize.ts), as
// the stop procedure calls it: at the first termination signal, only with
// DRAINGUARD_HOLD kinds listed and the pod's namespace known. The Kubernetes
// client is opened at the call only.

import type { Clock } from '../clock.ts';
import type { HoldKind } from '../config/hold-list.ts';
import type { KubeClient } from '../kube/client.ts';
import type { Logger } from '../log/logger.ts';
import type { NamespaceFinalizeOutcome } from './finalize.ts';

export interface NamespaceFinalizeUse {
  readonly kinds: readonly HoldKind[];
  readonly namespace: string | undefined;
  readonly env: NodeJS.ProcessEnv;
  readonly logger: Logger;
  /** The stop procedure's clock, which the deadline is on. */
  readonly clock: Clock;
}

/** The step before the drain, or undefined when no kinds are listed or the namespace is not known. */
export function namespaceFinalizer(
  use: NamespaceFinalizeUse,
): ((deadline: number, signal: AbortSignal) => Promise<NamespaceFinalizeOutcome>) | undefined {
  const { kinds, namespace, env, logger, clock } = use;
  if (kinds.length === 0 || namespace === undefined) return undefined;
  let client: Promise<KubeClient | undefined> | undefined;
  return async (deadline, signal) => {
    const { finalizeNamespaceContent } = await import('./finalize.ts');
    return finalizeNamespaceContent(
      { namespace, kinds, logger, clock, client: () => (client ??= openClient(env, logger)) },
      deadline,
      signal,
    );
  };
}

/** The API client, loaded with the rest of the kube layer only when the step runs. */
const openClient = async (env: NodeJS.ProcessEnv, logger: Logger): Promise<KubeClient | undefined> =>
  (await import('../kube/open.ts')).openOptionalClient(env, logger);
