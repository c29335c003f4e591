{{/*
Generated from deploy/components/rbac/admission-policy.yaml by npm run generate;
a test fails when it is out of date. The validations of drainguard's admission
policy: what the operator's ServiceAccount may change on the guarded objects.
*/}}
{{- define "drainguard.admissionValidations" -}}
- expression: "(has(object.metadata.finalizers) ? object.metadata.finalizers : []).filter(f, !f.startsWith('drainguard.dev/holder-')) == (has(oldObject.metadata.finalizers) ? oldObject.metadata.finalizers : []).filter(f, !f.startsWith('drainguard.dev/holder-'))"
  message: the operator's ServiceAccount may add or remove only drainguard.dev/holder- finalizers on this object
- expression: has(object.metadata.labels) == has(oldObject.metadata.labels) && (!has(object.metadata.labels) || object.metadata.labels == oldObject.metadata.labels) && has(object.metadata.annotations) == has(oldObject.metadata.annotations) && (!has(object.metadata.annotations) || object.metadata.annotations == oldObject.metadata.annotations) && has(object.metadata.ownerReferences) == has(oldObject.metadata.ownerReferences) && (!has(object.metadata.ownerReferences) || object.metadata.ownerReferences == oldObject.metadata.ownerReferences)
  message: the operator's ServiceAccount may change only metadata.finalizers of this object
- expression: "!(request.resource.resource in ['clusterroles', 'roles']) || (has(object.rules) == has(oldObject.rules) && (!has(object.rules) || object.rules == oldObject.rules) && has(object.aggregationRule) == has(oldObject.aggregationRule) && (!has(object.aggregationRule) || object.aggregationRule == oldObject.aggregationRule))"
  message: the operator's ServiceAccount may change only metadata.finalizers of this object
- expression: "!(request.resource.resource in ['clusterrolebindings', 'rolebindings']) || (object.roleRef == oldObject.roleRef && has(object.subjects) == has(oldObject.subjects) && (!has(object.subjects) || object.subjects == oldObject.subjects))"
  message: the operator's ServiceAccount may change only metadata.finalizers of this object
- expression: request.resource.resource != 'serviceaccounts' || (has(object.secrets) == has(oldObject.secrets) && (!has(object.secrets) || object.secrets == oldObject.secrets) && has(object.imagePullSecrets) == has(oldObject.imagePullSecrets) && (!has(object.imagePullSecrets) || object.imagePullSecrets == oldObject.imagePullSecrets) && has(object.automountServiceAccountToken) == has(oldObject.automountServiceAccountToken) && (!has(object.automountServiceAccountToken) || object.automountServiceAccountToken == oldObject.automountServiceAccountToken))
  message: the operator's ServiceAccount may change only metadata.finalizers of this object
- expression: request.resource.resource != 'deployments' || object.spec == oldObject.spec
  message: the operator's ServiceAccount may change only metadata.finalizers of this Deployment
{{- end -}}
