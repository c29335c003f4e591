// deploy/helm/drainguard/templates/_admission-rules.tpl: the validations of
// drainguard's admission policy, from the kustomize component's
// (deploy/components/rbac/admission-policy.yaml), so that the chart and the
// components enforce the very same rules.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';

export const ADMISSION_RULES = 'deploy/helm/drainguard/templates/_admission-rules.tpl';
const SOURCE = 'deploy/components/rbac/admission-policy.yaml';

export function admissionRules(root: string): string {
  const [policy] = parseAllDocuments(readFileSync(join(root, SOURCE), 'utf8')).map((d) => d.toJS() as { spec: { validations: unknown[] } });
  const validations = stringify(policy!.spec.validations, { lineWidth: 0 }).trimEnd();
  return `{{/*
Generated from ${SOURCE} by npm run generate;
a test fails when it is out of date. The validations of drainguard's admission
policy: what the operator's ServiceAccount may change on the guarded objects.
*/}}
{{- define "drainguard.admissionValidations" -}}
${validations.replaceAll('{{', '{{ "{{" }}')}
{{- end -}}
`;
}
