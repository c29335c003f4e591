// Kubernetes Status errors, shaped as the API server sends them.

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: { reason: string; message: string; field: string }[];
  retryAfterSeconds?: number;
}

const REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  409: 'Conflict',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/** An error the fake API server answers with a v1 Status body. */
export class ApiError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly details?: StatusDetails;

  constructor(code: number, message: string, options: { reason?: string; details?: StatusDetails } = {}) {
    super(message);
    this.code = code;
    this.reason = options.reason ?? REASONS[code] ?? 'Unknown';
    this.details = options.details;
  }

  toStatus(): Record<string, unknown> {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      ...(this.details && { details: this.details }),
      code: this.code,
    };
  }
}

/** "clusterroles.rbac.authorization.k8s.io", "pods" — as the API server names a resource in messages. */
export const qualified = (resource: string, group: string): string => (group ? `${resource}.${group}` : resource);

export const notFound = (resource: string, group: string, name: string): ApiError =>
  new ApiError(404, `${qualified(resource, group)} "${name}" not found`, { details: { name, group, kind: resource } });

export const alreadyExists = (resource: string, group: string, name: string): ApiError =>
  new ApiError(409, `${qualified(resource, group)} "${name}" already exists`, { reason: 'AlreadyExists', details: { name, group, kind: resource } });

export const conflict = (resource: string, group: string, name: string): ApiError =>
  new ApiError(
    409,
    `Operation cannot be fulfilled on ${qualified(resource, group)} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
    { details: { name, group, kind: resource } },
  );

export function invalid(kind: string, group: string, name: string, causes: { field: string; message: string; reason?: string }[]): ApiError {
  const text = causes.map((c) => `${c.field}: ${c.message}`).join(', ');
  return new ApiError(422, `${kind} "${name}" is invalid: ${text}`, {
    details: { name, group, kind, causes: causes.map((c) => ({ reason: c.reason ?? 'FieldValueForbidden', message: c.message, field: c.field })) },
  });
}
