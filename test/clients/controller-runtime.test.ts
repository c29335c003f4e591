// clients/go/ctrl built against the newest controller-runtime the module proxy
// serves (test/support/go.ts: CONTROLLER_RUNTIME_NEWEST), its example operator
// under the built executable against the real control plane: the suite in
// support/controller-runtime.ts. controller-runtime-oldest.test.ts runs it on
// the oldest release clients/go/ctrl supports.
import { ctrlBuild } from '../support/go.ts';
import { controllerRuntimeSuite } from './support/controller-runtime.ts';

await controllerRuntimeSuite(ctrlBuild('newest'));
