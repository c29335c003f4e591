// adopt's chart path on the real control plane (test/adopt/charts-cluster.ts): every third shape, from the second.
import { test } from 'uvu';
import { chartTests } from './charts-cluster.ts';

chartTests(1);
test.run();
