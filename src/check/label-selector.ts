// A metav1.LabelSelector as the API server evaluates it: every matchLabels pair
// and every matchExpressions requirement must hold; an empty selector selects
// everything. An operator it does not know selects nothing (the API server
// refuses such a selector, so nothing is selected by it either).

export interface LabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly { readonly key: string; readonly operator: string; readonly values?: readonly string[] }[];
}

export function selects(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  const has = (key: string) => Object.hasOwn(labels, key);
  return (
    Object.entries(selector.matchLabels ?? {}).every(([k, v]) => has(k) && labels[k] === v) &&
    (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
      switch (operator) {
        case 'In':
          return has(key) && values.includes(labels[key]!);
        case 'NotIn':
          return !has(key) || !values.includes(labels[key]!);
        case 'Exists':
          return has(key);
        case 'DoesNotExist':
          return !has(key);
        default:
          return false;
      }
    })
  );
}
