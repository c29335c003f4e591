import { DrainguardError } from '../errors.ts';

/** What the plugin cannot do to this project, said to kubebuilder's user; nothing is written. */
export const refuse = (message: string): DrainguardError =>
  new DrainguardError('DG_KUBEBUILDER_REFUSED', `${message}; nothing was written`);
