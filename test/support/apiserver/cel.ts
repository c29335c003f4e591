// The CEL of admission policies, on @bufbuild/cel (a conformance-tested
// evaluator): JSON objects as Kubernetes hands them to CEL (maps, and whole
// numbers as int64, as Go's unstructured decoding makes them), the strings
// extension Kubernetes adds, variables evaluated only when an expression
// reaches them, and errors worded as kube-apiserver words them
// (k8s.io/apiserver/pkg/admission/plugin/cel/activation.go).
//
// What Kubernetes' CEL has and this one has not: static type checking (an
// unknown variable or function is an error when evaluated, not when the policy
// is created), optional types (`?.`, `.orValue`), and the Kubernetes libraries
// (lists, regex find, URLs, IPs and CIDRs, quantities, semver, sets, format,
// authorizer), plus `quote` of the strings extension.

import { type CelInput, type CelValue, celEnv, celMap, isCelError, parse, plan } from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';

/** The functions every expression may call: the standard ones and the strings extension. */
const ENV = celEnv({ funcs: strings });

/** An expression that does not parse; the message is the evaluator's, after cel-go's `ERROR: ` prefix. */
export class CompileError extends Error {}

export type Outcome = { readonly value: CelValue } | { readonly error: string };

export interface Bindings {
  readonly object: unknown;
  readonly oldObject: unknown;
  readonly request: unknown;
  readonly params: unknown;
  readonly namespaceObject: unknown;
  /** The policy's variables by name, each evaluated when first reached. */
  readonly variables: ReadonlyMap<string, () => Outcome>;
}

export interface Program {
  readonly expression: string;
  run(bindings: Bindings): Outcome;
}

/** Thrown out of the evaluator when an expression reaches a variable that failed: the expression fails with it. */
class VariableFailed extends Error {}

export function compile(expression: string): Program {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(expression);
  } catch (err) {
    throw new CompileError(`ERROR: ${(err as Error).message}`);
  }
  const evaluate = plan(ENV, parsed);
  return {
    expression,
    run(bindings) {
      const result = evaluate({
        object: toCel(bindings.object),
        oldObject: toCel(bindings.oldObject),
        request: toCel(bindings.request),
        params: toCel(bindings.params),
        namespaceObject: toCel(bindings.namespaceObject),
        variables: celMap(lazyVariables(bindings.variables)),
      });
      if (!isCelError(result)) return { value: result };
      return { error: `expression '${expression}' resulted in error: ${goWording(result.message)}` };
    },
  };
}

/** JSON as CEL sees an unstructured object: maps, int64 for whole numbers, double for the rest. */
export function toCel(json: unknown): CelInput {
  if (Array.isArray(json)) return json.map(toCel);
  if (json !== null && typeof json === 'object') return new Map(Object.entries(json).map(([k, v]) => [k, toCel(v)]));
  if (typeof json === 'number' && Number.isInteger(json)) return BigInt(json);
  return json as CelInput;
}

/** cel-go's words for the same failures, where the API server's messages carry them. */
const goWording = (message: string): string => message.replace(/^field not found: /, 'no such key: ');

/** A map whose values are computed when read, so an unused variable that would fail fails nothing. */
function lazyVariables(variables: ReadonlyMap<string, () => Outcome>): ReadonlyMap<string, CelInput> {
  const value = (name: string): CelInput | undefined => {
    const evaluate = variables.get(name);
    if (!evaluate) return undefined;
    const outcome = evaluate();
    if ('error' in outcome) throw new VariableFailed(outcome.error);
    return outcome.value as CelInput;
  };
  // Iterating evaluates them all, as iterating cel-go's lazy map does.
  const entries = () => [...variables.keys()].map((name): [string, CelInput] => [name, value(name)!])[Symbol.iterator]();
  const lazy = {
    get: value,
    has: (name: string) => variables.has(name),
    get size() {
      return variables.size;
    },
    keys: () => variables.keys(),
    values: () => [...entries()].map(([, v]) => v)[Symbol.iterator](),
    entries,
    forEach(callback: (v: CelInput, k: string, m: ReadonlyMap<string, CelInput>) => void) {
      for (const [k, v] of entries()) callback(v, k, lazy);
    },
    [Symbol.iterator]: entries,
  } as unknown as ReadonlyMap<string, CelInput>;
  return lazy;
}
