// The CEL of admission policies, on @bufbuild/cel (a conformance-tested
// evaluator): JSON objects as Kubernetes hands them to CEL (maps, and whole
// numbers as int64, as Go's unstructured decoding makes them), the strings
// extension Kubernetes adds, variables evaluated only when an expression
// reaches them, and errors worded as kube-apiserver words them
// (k8s.io/apiserver/pkg/admission/plugin/cel/activation.go).
//
// What Kubernetes' CEL has and this one has not: static type checking beyond
// undeclared variables (an unknown function or field of `request` is an error
// when evaluated, not when the policy is created), optional types (`?.`, `.orValue`), and the Kubernetes libraries
// (lists, regex find, URLs, IPs and CIDRs, quantities, semver, sets, format,
// authorizer), plus `quote` of the strings extension.

import { type CelInput, type CelValue, celEnv, celMap, isCelError, parse, plan } from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';

/** The functions every expression may call: the standard ones and the strings extension. */
const ENV = celEnv({ funcs: strings });

/** An expression that does not parse, or names a variable no policy has; worded as cel-go words it, but for the parser's own text. */
export class CompileError extends Error {}

type Expr = ReturnType<typeof parse>['expr'];

/** The variables of a ValidatingAdmissionPolicy's expressions; `params` only with a paramKind, which the stand-in refuses. */
const DECLARED = new Set(['object', 'oldObject', 'request', 'namespaceObject', 'authorizer', 'variables']);

export type Outcome = { readonly value: CelValue } | { readonly error: string };

/** What an expression's variables are bound to (cel-go's activation). */
export interface Activation {
  readonly object: unknown;
  readonly oldObject: unknown;
  readonly request: unknown;
  readonly namespaceObject: unknown;
  /** The policy's variables by name, each evaluated when first reached. */
  readonly variables: ReadonlyMap<string, () => Outcome>;
}

export interface Program {
  readonly expression: string;
  run(activation: Activation): Outcome;
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
  const unknown = undeclared(parsed.expr, new Set());
  if (unknown.length > 0) {
    throw new CompileError(unknown.map(({ id, name }) => located(expression, Number(parsed.sourceInfo?.positions[id.toString()] ?? 0), `undeclared reference to '${name}' (in container '')`)).join('\n'));
  }
  const evaluate = plan(ENV, parsed);
  return {
    expression,
    run(activation) {
      const result = evaluate({
        object: toCel(activation.object),
        oldObject: toCel(activation.oldObject),
        request: toCel(activation.request),
        namespaceObject: toCel(activation.namespaceObject),
        variables: celMap(lazyVariables(activation.variables)),
      });
      if (!isCelError(result)) return { value: result };
      return { error: `expression '${expression}' resulted in error: ${goWording(result.message)}` };
    },
  };
}

/** Identifiers that are neither declared nor bound by an enclosing comprehension (a macro such as all() or filter()). */
function undeclared(e: Expr | undefined, bound: ReadonlySet<string>): { id: bigint; name: string }[] {
  if (!e) return [];
  const k = e.exprKind;
  switch (k.case) {
    case 'identExpr':
      return DECLARED.has(k.value.name) || bound.has(k.value.name) ? [] : [{ id: e.id, name: k.value.name }];
    case 'selectExpr':
      return undeclared(k.value.operand, bound);
    case 'callExpr':
      return [k.value.target, ...k.value.args].flatMap((a) => undeclared(a, bound));
    case 'listExpr':
      return k.value.elements.flatMap((a) => undeclared(a, bound));
    case 'structExpr':
      return k.value.entries.flatMap((entry) => [...(entry.keyKind.case === 'mapKey' ? undeclared(entry.keyKind.value, bound) : []), ...undeclared(entry.value, bound)]);
    case 'comprehensionExpr': {
      const c = k.value;
      const inner = new Set([...bound, c.iterVar, c.iterVar2, c.accuVar].filter(Boolean));
      return [...undeclared(c.iterRange, bound), ...undeclared(c.accuInit, bound), ...[c.loopCondition, c.loopStep, c.result].flatMap((a) => undeclared(a, inner))];
    }
    default:
      return [];
  }
}

/** cel-go's `ERROR: <input>:LINE:COLUMN: MESSAGE` with the line and a caret under the place. */
function located(text: string, offset: number, message: string): string {
  const before = text.slice(0, offset).split('\n');
  const line = before.length;
  const column = before[line - 1]!.length;
  return `ERROR: <input>:${line}:${column + 1}: ${message}\n | ${text.split('\n')[line - 1]}\n | ${'.'.repeat(column)}^`;
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
