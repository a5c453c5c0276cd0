import test from 'ava';
import { createLogger } from '@nodelet/kernel';
import { conformanceEnv, runProxyConformance } from '@nodelet/proxy/testing';
import { NftablesBackend, renderNftables } from './backend.js';

const env = await conformanceEnv(['nft']);
runProxyConformance(
  test,
  {
    name: 'nftables',
    golden: { file: new URL('../golden/conformance.nft', import.meta.url), render: renderNftables },
    kernel: (netns) => new NftablesBackend({ netns, logger: createLogger({ sink: () => undefined }) }),
  },
  env,
);
