// The token drainguard talks to the API with. A pod with
// automountServiceAccountToken: false (or whose ServiceAccount says false and
// the pod says nothing) gets no token in any container; drainguard, which
// needs the API for the guard and the hold, then cannot set either. A
// projected token mounted at the ServiceAccount directory of drainguard's own
// container, or a KUBECONFIG in its environment, gives it one.

import { SERVICE_ACCOUNT_DIR } from '../kube/locate.ts';
import type { Found, Manifest } from './finding.ts';
import { type Container, type PodSpec, envOf } from './pod.ts';

const TEXT = {
  message: (where: string, source: string) =>
    `${source} says automountServiceAccountToken: false and ${where} mounts no token at ${SERVICE_ACCOUNT_DIR}: ` +
    'drainguard cannot reach the Kubernetes API, and neither guards nor holds anything',
  fix: (where: string) =>
    `mount in ${where} a projected volume at ${SERVICE_ACCOUNT_DIR} with a serviceAccountToken (path: token), ` +
    "the ConfigMap kube-root-ca.crt (key ca.crt) and the downward API's metadata.namespace (path: namespace), " +
    'as the kubelet mounts it by default; or let the pod mount its token (automountServiceAccountToken: true)',
};

/** Whether the pod of POD, run as ACCOUNT (its ServiceAccount object, when in the manifests), mounts no token in container C. */
export function checkToken(c: Container, pod: PodSpec, account: Manifest | undefined): Found[] {
  const podSays = pod.automountServiceAccountToken;
  const accountSays = account?.automountServiceAccountToken as boolean | undefined;
  if ((podSays ?? accountSays ?? true) !== false) return [];
  if (envOf(c, {}).KUBECONFIG !== undefined) return [];
  const mount = (c.volumeMounts ?? []).find((m) => m.mountPath.replace(/\/$/, '') === SERVICE_ACCOUNT_DIR);
  const volume = mount && (pod.volumes ?? []).find((v) => v.name === mount.name);
  if (volume?.projected?.sources?.some((s) => s.serviceAccountToken !== undefined)) return [];
  const where = `container ${c.name}`;
  const source = podSays === false ? 'the pod' : `its ServiceAccount ${account!.metadata.namespace}/${account!.metadata.name}`;
  return [{ code: 'token-not-mounted', severity: 'error', message: TEXT.message(where, source), fix: TEXT.fix(where) }];
}
