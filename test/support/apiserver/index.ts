// The fake Kubernetes API server for tests; see README.md beside this file.
export { FakeApiServer, FakeClock, TOKEN_LEEWAY_MS, startApiServer } from './server.ts';
export type { ApiServerOptions, Fault, FaultHandle, RecordedRequest, RequestInfo } from './server.ts';
export { writeKubeconfig, writeServiceAccountFiles } from './kubeconfig.ts';
export { timestamp } from './store.ts';
export type { DeleteOptions, KubeObject } from './store.ts';
export { ApiError } from './errors.ts';
export { apiRequest } from './client.ts';
export type { ApiResponse } from './client.ts';
