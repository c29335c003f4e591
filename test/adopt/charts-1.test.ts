// adopt's chart path on the real control plane (test/adopt/charts-cluster.ts): every third shape, from the first.
import { test } from 'uvu';
import { chartTests } from './charts-cluster.ts';

chartTests(0);
test.run();
