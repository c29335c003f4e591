// Kubernetes Status errors, worded and shaped as kube-apiserver sends them
// (k8s.io/apimachinery/pkg/api/errors).

export interface StatusCause {
  /** Left out when empty, as an admission policy's denial leaves it. */
  readonly reason?: string;
  readonly message: string;
  readonly field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

const REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Expired',
  413: 'RequestEntityTooLarge',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
};

/** An error answered with a v1 Status body. */
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
    return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: this.message, reason: this.reason, ...(this.details && { details: this.details }), code: this.code };
  }
}

/** What an error names: the resource ("clusterroles"), its group, and the object's name. */
export interface Subject {
  readonly resource: string;
  readonly group: string;
  readonly name?: string;
}

/** "clusterroles.rbac.authorization.k8s.io", "pods": how the API server names a resource in messages. */
export const qualified = (resource: string, group: string): string => (group ? `${resource}.${group}` : resource);

// Empty fields are left out, as Go's omitempty does.
const details = (s: Subject): StatusDetails => ({ ...(s.name && { name: s.name }), ...(s.group && { group: s.group }), kind: s.resource });

export const notFound = (s: Subject): ApiError => new ApiError(404, `${qualified(s.resource, s.group)} "${s.name}" not found`, { details: details(s) });

export const alreadyExists = (s: Subject): ApiError => new ApiError(409, `${qualified(s.resource, s.group)} "${s.name}" already exists`, { reason: 'AlreadyExists', details: details(s) });

/** 409 Conflict: `Operation cannot be fulfilled on ...: REASON`. */
export const conflict = (s: Subject, why: string): ApiError => new ApiError(409, `Operation cannot be fulfilled on ${qualified(s.resource, s.group)} "${s.name}": ${why}`, { details: details(s) });

export const MODIFIED = 'the object has been modified; please apply your changes to the latest version and try again';

export const forbidden = (s: Subject, why: string): ApiError =>
  new ApiError(403, `${qualified(s.resource, s.group)}${s.name !== undefined ? ` "${s.name}"` : ''} is forbidden: ${why}`, { details: details(s) });

export const badRequest = (message: string): ApiError => new ApiError(400, message);

export const notFoundPath = (): ApiError => new ApiError(404, 'the server could not find the requested resource', { details: {} });

export const methodNotAllowed = (): ApiError => new ApiError(405, 'the server does not allow this method on the requested resource', { details: {} });

export interface FieldError {
  readonly field: string;
  /** "Invalid value: ...", "Required value", "Forbidden: ..." */
  readonly message: string;
  readonly reason?: 'FieldValueInvalid' | 'FieldValueRequired' | 'FieldValueForbidden' | 'FieldValueNotSupported' | 'FieldValueDuplicate' | 'FieldValueTooLong';
}

/** 422 Invalid: `KIND.GROUP "NAME" is invalid: FIELD: MESSAGE` (several joined by ", ", in brackets). */
export function invalid(kind: string, group: string, name: string, errors: readonly FieldError[]): ApiError {
  const text = errors.map((e) => `${e.field}: ${e.message}`);
  const joined = text.length === 1 ? text[0] : `[${text.join(', ')}]`;
  return new ApiError(422, `${qualified(kind, group)} "${name}" is invalid: ${joined}`, {
    details: { ...(name && { name }), ...(group && { group }), kind, causes: errors.map((e) => ({ reason: e.reason ?? 'FieldValueInvalid', message: e.message, field: e.field })) },
  });
}
