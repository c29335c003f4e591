// What `drainguard install` copies: the libraries and the loader the
// executable needs, from the loader's list.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseLoadedObjects } from '../../src/install/sources.ts';

test("the loader's list: libraries by the name the executable asks for, the loader once", () => {
  const list = `
	linux-vdso.so.1 (0x00007ffc1a5f2000)
	libdl.so.2 => /lib/x86_64-linux-gnu/libdl.so.2 (0x00007f3a0c5e4000)
	libc.so.6 => /lib/x86_64-linux-gnu/libc-2.31.so (0x00007f3a0c3f0000)
	ld-linux-x86-64.so.2 => /lib64/ld-linux-x86-64.so.2 (0x00007f3a0c600000)
	/lib64/ld-linux-x86-64.so.2 (0x00007f3a0c600000)
`;
  assert.equal(parseLoadedObjects(list), {
    loader: '/lib64/ld-linux-x86-64.so.2',
    libraries: [
      { name: 'libdl.so.2', path: '/lib/x86_64-linux-gnu/libdl.so.2' },
      { name: 'libc.so.6', path: '/lib/x86_64-linux-gnu/libc-2.31.so' },
    ],
  });
  assert.throws(() => parseLoadedObjects('\tlibfoo.so.1 => not found\n\t/lib64/ld-linux-x86-64.so.2 (0x1)\n'), /cannot find libfoo\.so\.1/);
  assert.throws(
    () => parseLoadedObjects('\tlibc.so.6 => /lib/libc.so.6 (0x1)\n\t/lib/ld-musl-x86_64.so.1 (0x2)\n'),
    /expected glibc's loader for x64 \(ld-linux-x86-64\.so\.2\)/,
  );
});

test.run();
