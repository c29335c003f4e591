import { resolveSupervisorConfig } from '../config/supervisor.ts';
import { superviseSidecar } from './supervise.ts';

export const resolve = resolveSupervisorConfig;

export const run = superviseSidecar;
