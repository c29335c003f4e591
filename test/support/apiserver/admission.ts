// ValidatingAdmissionPolicy admission (k8s.io/apiserver/pkg/admission/plugin/
// policy/validating): a create, update or delete that got past authorization
// and its type's own checks is held, before it is stored, to every binding's
// policy: matchConstraints and the binding's matchResources (rules, names,
// namespace and object selectors), matchConditions, variables and
// validations in CEL (cel.ts). A denial is worded as the real plugin words it.
// The stand-in reads policies from its store, so they are in force at once;
// the real server's take a second or two (its informers).
//
// Not modelled: paramKind and paramRef (refused when a policy or binding is
// written), auditAnnotations and the Audit and Warn actions (ignored),
// matchPolicy Equivalent beyond the exact resource, the authorizer variable,
// the cost budget, status.typeChecking.

import { type Activation, CompileError, type Outcome, type Program, compile } from './cel.ts';
import { ApiError, type FieldError, invalid, qualified } from './errors.ts';
import type { UserInfo } from './rbac.ts';
import type { ResourceType } from './resources.ts';
import { matchesLabelSelector } from './selectors.ts';
import type { KubeObject, Store } from './store.ts';
import type { Strategy } from './strategies.ts';

const GROUP = 'admissionregistration.k8s.io';
const POLICIES = `${GROUP}/validatingadmissionpolicies`;
const BINDINGS = `${GROUP}/validatingadmissionpolicybindings`;

export type Operation = 'CREATE' | 'UPDATE' | 'DELETE';

/** What admission knows of a write (admission.Attributes). */
export interface AdmissionRequest {
  readonly operation: Operation;
  readonly type: ResourceType;
  readonly subresource?: string;
  /** The name on the URL, or in the body of a create; '' for a create by generateName. */
  readonly name: string;
  /** The object's namespace; none for a cluster-scoped one, a Namespace included. */
  readonly namespace?: string;
  /** The object as it would be stored; null on DELETE. */
  readonly object: KubeObject | null;
  /** The stored object; null on CREATE. */
  readonly oldObject: KubeObject | null;
  readonly user: UserInfo;
}

interface Denial {
  readonly policy: string;
  readonly binding?: string;
  readonly message: string;
  readonly reason?: string;
}

export class PolicyAdmission {
  readonly #store: Store;
  /** Compiled expressions by their text: a policy's are compiled once, as the real plugin does when it sees one. */
  readonly #programs = new Map<string, Program | CompileError>();

  constructor(store: Store) {
    this.#store = store;
  }

  /** Whether a write of `type` has any binding to answer to: the registry skips building the request when not. */
  applies(type: ResourceType): boolean {
    // Admission configuration itself is exempt (rules.IsExemptAdmissionConfigurationResource).
    return type.group !== GROUP && this.#store.list(BINDINGS).length > 0;
  }

  /** Throws the first denial, as kube-apiserver answers it. */
  admit(request: AdmissionRequest): void {
    if (!this.applies(request.type)) return;
    const bindings = this.#store.list(BINDINGS);
    const denials: Denial[] = [];
    for (const policy of this.#store.list(POLICIES)) {
      const spec = policy.spec ?? {};
      if (!matches(spec.matchConstraints, request, this.#store, false)) continue;
      for (const binding of bindings.filter((b) => b.spec?.policyName === policy.metadata.name)) {
        if (binding.spec.matchResources && !matches(binding.spec.matchResources, request, this.#store, true)) continue;
        const denial = this.#evaluate(policy, request);
        if (denial && (binding.spec.validationActions ?? []).includes('Deny')) denials.push({ ...denial, binding: binding.metadata.name });
      }
    }
    if (denials.length > 0) throw refusal(request, denials[0]!);
  }

  /** The first validation that denies (or fails, with failurePolicy Fail), or none. */
  #evaluate(policy: KubeObject, request: AdmissionRequest): Omit<Denial, 'binding'> | undefined {
    const spec = policy.spec;
    const name = policy.metadata.name;
    const fail = (spec.failurePolicy ?? 'Fail') === 'Fail';
    const activation = this.#activation(spec, request);
    const run = (expression: string): Outcome => {
      const program = this.#program(expression);
      return program instanceof CompileError ? { error: `compilation error: ${program.message}` } : program.run(activation);
    };
    // matchConditions: any false skips the policy; errors fail it only if none is false.
    const errors: string[] = [];
    for (const condition of spec.matchConditions ?? []) {
      const outcome = run(condition.expression);
      if ('error' in outcome) errors.push(outcome.error);
      else if (outcome.value === false) return undefined;
    }
    if (errors.length > 0) return fail ? { policy: name, message: errors.length === 1 ? errors[0]! : `[${errors.join(', ')}]` } : undefined;
    for (const validation of spec.validations ?? []) {
      const outcome = run(validation.expression);
      if ('error' in outcome) {
        if (fail) return { policy: name, message: outcome.error };
        continue;
      }
      if (outcome.value === true) continue;
      return { policy: name, message: this.#message(validation, run), reason: validation.reason };
    }
    return undefined;
  }

  /** messageExpression if it gives one line of text, else message, else the expression (validator.go). */
  #message(validation: any, run: (expression: string) => Outcome): string {
    if (validation.messageExpression) {
      const outcome = run(validation.messageExpression);
      if ('value' in outcome && typeof outcome.value === 'string') {
        const text = outcome.value.trim();
        if (text && !text.includes('\n') && text.length <= 5120) return text;
      }
    }
    if (validation.message?.trim()) return validation.message.trim();
    return `failed expression: ${String(validation.expression).trim()}`;
  }

  #activation(spec: any, request: AdmissionRequest): Activation {
    const variables = new Map<string, () => Outcome>();
    const done = new Map<string, Outcome>();
    const activation: Activation = {
      object: request.object,
      oldObject: request.oldObject,
      request: admissionRequest(request),
      // A Namespace's own request has none (dispatcher.go).
      namespaceObject: isNamespace(request.type) ? null : namespaceObject(this.#store, request.namespace),
      variables,
    };
    for (const v of spec.variables ?? []) {
      variables.set(v.name, () => {
        const known = done.get(v.name);
        if (known) return known;
        // A variable may name only those before it; a loop is an error, not a hang.
        done.set(v.name, { error: `expression '${v.expression}' resulted in error: variable ${v.name} refers to itself` });
        const program = this.#program(v.expression);
        const outcome = program instanceof CompileError ? { error: `composited variable "${v.name}" fails to compile: ${program.message}` } : program.run(activation);
        done.set(v.name, outcome);
        return outcome;
      });
    }
    return activation;
  }

  #program(expression: string): Program | CompileError {
    let program = this.#programs.get(expression);
    if (!program) {
      try {
        program = compile(expression);
      } catch (err) {
        if (!(err instanceof CompileError)) throw err;
        program = err;
      }
      this.#programs.set(expression, program);
    }
    return program;
  }
}

// ---- matching ----------------------------------------------------------------------

/** matchConstraints of a policy, or matchResources of a binding (matching/matching.go). */
function matches(criteria: any, request: AdmissionRequest, store: Store, isBinding: boolean): boolean {
  if (!criteria) return false;
  if (!namespaceMatches(criteria.namespaceSelector, request, store)) return false;
  if (!objectMatches(criteria.objectSelector, request)) return false;
  if (rulesMatch(criteria.excludeResourceRules ?? [], request)) return false;
  if (isBinding && criteria.resourceRules === undefined) return true;
  return rulesMatch(criteria.resourceRules ?? [], request);
}

function rulesMatch(rules: any[], request: AdmissionRequest): boolean {
  return rules.some((rule) => ruleMatches(rule, request) && (!rule.resourceNames?.length || rule.resourceNames.includes(request.name)));
}

const anyOf = (items: string[] | undefined, wanted: string) => (items ?? []).some((i) => i === '*' || i === wanted);

/** rules.Matcher: scope, operation, group, version, and resource with its subresource ("*" is every resource, not their subresources). */
function ruleMatches(rule: any, request: AdmissionRequest): boolean {
  const { type } = request;
  const clusterScoped = isNamespace(type) || !request.namespace;
  const scope = rule.scope ?? '*';
  if (scope === 'Namespaced' && clusterScoped) return false;
  if (scope === 'Cluster' && !clusterScoped) return false;
  if (!['*', 'Namespaced', 'Cluster'].includes(scope)) return false;
  if (!anyOf(rule.operations, request.operation)) return false;
  if (!anyOf(rule.apiGroups, type.group) || !anyOf(rule.apiVersions, type.version)) return false;
  return (rule.resources ?? []).some((r: string) => {
    const [res, sub = ''] = r.split(/\/(.*)/s);
    return (res === '*' || res === type.resource) && (sub === '*' || sub === (request.subresource ?? ''));
  });
}

/** A cluster-scoped object always matches; a namespace by its own labels; the rest by their namespace's. */
function namespaceMatches(selector: any, request: AdmissionRequest, store: Store): boolean {
  if (isEmptySelector(selector)) return true;
  if (!request.namespace && !isNamespace(request.type)) return true;
  const labels = isNamespace(request.type) ? (request.object ?? request.oldObject)?.metadata.labels : store.get('/namespaces', undefined, request.namespace!)?.metadata.labels;
  return matchesLabelSelector(selector, labels ?? {});
}

function objectMatches(selector: any, request: AdmissionRequest): boolean {
  if (isEmptySelector(selector)) return true;
  return [request.object, request.oldObject].some((o) => o !== null && matchesLabelSelector(selector, o.metadata.labels ?? {}));
}

const isNamespace = (type: ResourceType) => type.group === '' && type.resource === 'namespaces';

const isEmptySelector = (s: any) => !s || (Object.keys(s.matchLabels ?? {}).length === 0 && (s.matchExpressions ?? []).length === 0);

// ---- what CEL sees -------------------------------------------------------------------

const OPTIONS_KIND: Record<Operation, string> = { CREATE: 'CreateOptions', UPDATE: 'UpdateOptions', DELETE: 'DeleteOptions' };

/** An AdmissionRequest as JSON, its empty fields left out (omitempty), as cel.CreateAdmissionRequest makes it. */
function admissionRequest(r: AdmissionRequest): Record<string, unknown> {
  const { type, user } = r;
  const kind = { group: type.group, version: type.version, kind: type.kind };
  const resource = { group: type.group, version: type.version, resource: type.resource };
  return {
    uid: '',
    kind,
    resource,
    ...(r.subresource && { subResource: r.subresource }),
    requestKind: kind,
    requestResource: resource,
    ...(r.subresource && { requestSubResource: r.subresource }),
    ...(r.name && { name: r.name }),
    // A Namespace's requests carry its own name as their namespace (admission.Attributes).
    ...((isNamespace(type) ? r.name : r.namespace) && { namespace: isNamespace(type) ? r.name : r.namespace }),
    operation: r.operation,
    userInfo: { ...(user.name && { username: user.name }), ...(user.uid && { uid: user.uid }), ...(user.groups.length && { groups: [...user.groups] }), ...(user.extra && Object.keys(user.extra).length && { extra: user.extra }) },
    dryRun: false,
    options: { kind: OPTIONS_KIND[r.operation], apiVersion: 'meta.k8s.io/v1' },
  };
}

/** The request's Namespace, metadata cut down as cel.CreateNamespaceObject does; null for cluster-scoped objects. */
function namespaceObject(store: Store, namespace: string | undefined): unknown {
  const ns = namespace ? store.get('/namespaces', undefined, namespace) : undefined;
  if (!ns) return null;
  const keep = ['name', 'generateName', 'namespace', 'uid', 'resourceVersion', 'generation', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'labels', 'annotations', 'finalizers'];
  const metadata = Object.fromEntries(Object.entries(ns.metadata).filter(([k]) => keep.includes(k)));
  return { metadata, spec: ns.spec ?? {}, status: ns.status ?? {} };
}

// ---- the refusal -----------------------------------------------------------------------

const CODES: Record<string, number> = { Unauthorized: 401, Forbidden: 403, RequestEntityTooLarge: 413, Invalid: 422 };

/** admission.NewForbidden with the policy's reason and code (dispatcher.go): `RESOURCE "NAME" is forbidden: ValidatingAdmissionPolicy ...`. */
function refusal(request: AdmissionRequest, denial: Denial): ApiError {
  const message = denial.binding
    ? `ValidatingAdmissionPolicy '${denial.policy}' with binding '${denial.binding}' denied request: ${denial.message}`
    : `ValidatingAdmissionPolicy '${denial.policy}' denied request: ${denial.message}`;
  const { group, resource } = request.type;
  const name = request.name || request.object?.metadata.name || request.object?.metadata.generateName || 'Unknown';
  const reason = denial.reason || 'Invalid';
  return new ApiError(CODES[reason] ?? 422, `${qualified(resource, group)} "${name}" is forbidden: ${message}`, {
    reason,
    details: { name, ...(group && { group }), kind: resource, causes: [{ message }] },
  });
}

// ---- the policy types' own defaults and validation ----------------------------------------

const STANDIN = 'the stand-in API server does not model it (test/support/apiserver/README.md)';

function matchDefaults(m: any): void {
  if (!m || typeof m !== 'object') return;
  m.matchPolicy ??= 'Equivalent';
  m.namespaceSelector ??= {};
  m.objectSelector ??= {};
  for (const rule of [...(m.resourceRules ?? []), ...(m.excludeResourceRules ?? [])]) rule.scope ??= '*';
}

/** The expressions of a policy that must compile, with their fields. */
function expressions(spec: any): [string, string][] {
  const out: [string, string][] = [];
  (spec.matchConditions ?? []).forEach((c: any, i: number) => out.push([`spec.matchConditions[${i}].expression`, c.expression]));
  (spec.variables ?? []).forEach((v: any, i: number) => out.push([`spec.variables[${i}].expression`, v.expression]));
  (spec.validations ?? []).forEach((v: any, i: number) => {
    out.push([`spec.validations[${i}].expression`, v.expression]);
    if (v.messageExpression) out.push([`spec.validations[${i}].messageExpression`, v.messageExpression]);
  });
  return out;
}

function policyErrors(obj: KubeObject): FieldError[] {
  const spec = obj.spec ?? {};
  const errors: FieldError[] = [];
  if (spec.paramKind) errors.push({ field: 'spec.paramKind', message: `Forbidden: ${STANDIN}`, reason: 'FieldValueForbidden' });
  if (!['Fail', 'Ignore'].includes(spec.failurePolicy)) errors.push({ field: 'spec.failurePolicy', message: `Unsupported value: "${spec.failurePolicy}": supported values: "Fail", "Ignore"`, reason: 'FieldValueNotSupported' });
  if (!spec.matchConstraints) errors.push({ field: 'spec.matchConstraints', message: 'Required value', reason: 'FieldValueRequired' });
  else if (!spec.matchConstraints.resourceRules?.length) errors.push({ field: 'spec.matchConstraints.resourceRules', message: 'Required value', reason: 'FieldValueRequired' });
  if (!spec.validations?.length && !spec.auditAnnotations?.length) errors.push({ field: 'spec.validations', message: 'Required value: validations or auditAnnotations must contain at least one item', reason: 'FieldValueRequired' });
  for (const [field, expression] of expressions(spec)) {
    if (typeof expression !== 'string' || expression.trim() === '') {
      errors.push({ field, message: 'Required value', reason: 'FieldValueRequired' });
      continue;
    }
    try {
      compile(expression);
    } catch (err) {
      if (!(err instanceof CompileError)) throw err;
      errors.push({ field, message: `Invalid value: ${JSON.stringify(expression)}: compilation failed: ${err.message}` });
    }
  }
  return errors;
}

function bindingErrors(obj: KubeObject): FieldError[] {
  const spec = obj.spec ?? {};
  const errors: FieldError[] = [];
  if (!spec.policyName) errors.push({ field: 'spec.policyName', message: 'Required value', reason: 'FieldValueRequired' });
  if (spec.paramRef) errors.push({ field: 'spec.paramRef', message: `Forbidden: ${STANDIN}`, reason: 'FieldValueForbidden' });
  const actions: unknown[] = spec.validationActions ?? [];
  if (actions.length === 0) errors.push({ field: 'spec.validationActions', message: 'Required value', reason: 'FieldValueRequired' });
  actions.forEach((a, i) => {
    if (!['Deny', 'Warn', 'Audit'].includes(a as string)) errors.push({ field: `spec.validationActions[${i}]`, message: `Unsupported value: "${a}": supported values: "Audit", "Deny", "Warn"`, reason: 'FieldValueNotSupported' });
  });
  return errors;
}

function checked(kind: string, errorsOf: (obj: KubeObject) => FieldError[]): Strategy {
  const check = (obj: KubeObject) => {
    obj.spec ??= {};
    if (kind === 'ValidatingAdmissionPolicy') obj.spec.failurePolicy ??= 'Fail';
    matchDefaults(kind === 'ValidatingAdmissionPolicy' ? obj.spec.matchConstraints : obj.spec.matchResources);
    const errors = errorsOf(obj);
    if (errors.length) throw invalid(kind, GROUP, obj.metadata.name, errors);
  };
  return { create: check, update: check };
}

export const policyStrategy = checked('ValidatingAdmissionPolicy', policyErrors);
export const policyBindingStrategy = checked('ValidatingAdmissionPolicyBinding', bindingErrors);
