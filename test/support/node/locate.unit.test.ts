// locateNode with a kubelet of another release than the control plane's: one not built is named, with the build to run.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { releaseDir } from '../kubernetes/build.ts';
import { locateNode } from './locate.ts';

test('a kubeletRelease that is not built: the directory looked in and the command that builds it', () => {
  const found = locateNode({}, 'v0.0.1-absent.0');
  assert.equal(found, { missing: `no kubelet in ${releaseDir('v0.0.1-absent.0')} (npm run k8s -- 0.0.1-absent.0 builds it)` });
});

test.run();
