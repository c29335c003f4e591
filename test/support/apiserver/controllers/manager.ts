// The stand-in's kube-controller-manager: the controllers the tests rely on,
// stopped and started together (a stopped controller-manager collects no
// garbage and finishes no namespace; the API server keeps serving).

import type { Registry } from '../registry.ts';
import { Controller } from './controller.ts';
import { DeploymentController } from './deployment.ts';
import { GarbageCollector } from './gc.ts';
import { JobController } from './job.ts';
import { NamespaceController } from './namespace.ts';
import { ReplicaSetController } from './replicaset.ts';
import { ServiceAccountController } from './serviceaccount.ts';

export class ControllerManager {
  readonly #controllers: Controller[];

  constructor(registry: Registry, caPem: string) {
    this.#controllers = [
      new GarbageCollector(registry),
      new NamespaceController(registry),
      new ServiceAccountController(registry, caPem),
      new ReplicaSetController(registry),
      new DeploymentController(registry),
      new JobController(registry),
    ];
  }

  get running(): boolean {
    return this.#controllers.some((c) => c.running);
  }

  start(): void {
    for (const c of this.#controllers) c.start();
  }

  stop(): void {
    for (const c of this.#controllers) c.stop();
  }
}
