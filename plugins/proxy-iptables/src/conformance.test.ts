import test from 'ava';
import { createLogger } from '@nodelet/kernel';
import { conformanceEnv, runProxyConformance } from '@nodelet/proxy/testing';
import { IptablesBackend, renderIptables } from './backend.js';

// The shared proxy conformance suite, once per iptables back end (x_tables and nf_tables).
const env = await conformanceEnv(['iptables-legacy-restore', 'iptables-nft-restore']);
runProxyConformance(test, {
  name: 'iptables',
  golden: { file: new URL('../golden/conformance.iptables', import.meta.url), render: renderIptables },
});
for (const mode of ['legacy', 'nft'] as const) {
  runProxyConformance(
    test,
    {
      name: `iptables-${mode}`,
      kernel: (netns) =>
        new IptablesBackend({ backend: mode, netns, logger: createLogger({ sink: () => undefined }) }),
    },
    env,
  );
}
