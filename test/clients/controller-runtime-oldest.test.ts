// clients/go/ctrl built against the oldest controller-runtime it supports, the
// one its go.mod requires, its example operator under the built executable
// against the real control plane: the suite in support/controller-runtime.ts.
import { ctrlBuild } from '../support/go.ts';
import { controllerRuntimeSuite } from './support/controller-runtime.ts';

await controllerRuntimeSuite(ctrlBuild('oldest'));
