// Test support: a KubeletConfiguration file with the given fields, resolved as `nodelet kubelet --config`
// resolves it (from another working directory), the file removed at the test's end.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, MemorySink } from '@nodelet/kernel';
import { resolveKubeletSetup } from './kubelet-setup.js';

export function kubeletConfigSetup(
  t: { teardown: (fn: () => void) => void },
  fields: string,
  sink = new MemorySink(),
  flags: Omit<Parameters<typeof resolveKubeletSetup>[0], 'config'> = {},
) {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-cli-kubelet-config-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'kubelet.yaml');
  writeFileSync(file, `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n${fields}`);
  const env = {
    cwd: '/elsewhere',
    hostname: 'node',
    isRoot: false,
    homeDir: '/home/ada',
    ipv4: ['192.0.2.7'],
    logger: createLogger({ sink: sink.sink }),
  };
  return { dir, file, setup: () => resolveKubeletSetup({ ...flags, config: file }, env) };
}
