import test from 'ava';
import { runProxyConformance } from '@nodelet/proxy/testing';
import { formatIpvs, renderIpvs } from './render.js';

// This kernel has no IPVS: the suite checks the rendered rules; traffic is tested where IPVS exists.
runProxyConformance(test, {
  name: 'ipvs',
  golden: {
    file: new URL('../golden/conformance.ipvs', import.meta.url),
    render: (s) => formatIpvs(renderIpvs(s)),
  },
});
