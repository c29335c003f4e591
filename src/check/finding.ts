// What `drainguard check` reports: one mistake in the manifests, with the fix.

export type Severity = 'error' | 'warning';

export interface Finding {
  /** Stable identifier of the kind of mistake (documented in docs/helm.md). */
  readonly code: string;
  readonly severity: Severity;
  /** KIND/NAMESPACE/NAME of the object the fix goes into (the Deployment, mostly). */
  readonly object: string;
  readonly message: string;
  readonly fix: string;
}

/** A parsed manifest: only what the checks read is typed. */
export interface Manifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly [key: string]: unknown };
  readonly [key: string]: any;
}

export const objectId = (o: Pick<Manifest, 'kind' | 'metadata'>, namespace = o.metadata.namespace): string =>
  `${o.kind}/${namespace ? `${namespace}/` : ''}${o.metadata.name}`;

/** A finding of one workload, before the object it goes into is named. */
export type Found = Omit<Finding, 'object'>;
