import test from 'ava';
import { kubeletHelp, parseKubeletArgs } from './kubelet-command.js';
import { kubeletConfigSetup } from './test-kubelet-config.js';

// The dead-container flags of upstream's kubelet reach the kubelet's container garbage collector;
// bad values are refused naming the flag.

test('--minimum-container-ttl-duration, --maximum-dead-containers-per-container and --maximum-dead-containers', (t) => {
  const { flags } = parseKubeletArgs([
    '--minimum-container-ttl-duration=1m30s',
    '--maximum-dead-containers-per-container',
    '3',
    '--maximum-dead-containers=-1',
  ]);
  t.deepEqual(flags.containerGC, { minAgeMs: 90_000, maxPerPodContainer: 3, maxContainers: -1 });
  const { setup } = kubeletConfigSetup(t, '', undefined, { containerGC: { maxContainers: 100 } });
  t.deepEqual(setup().kubelet.containerGC, { maxContainers: 100 });
  t.is(parseKubeletArgs([]).flags.containerGC, undefined, 'none given: the kubelet uses upstream defaults');
  t.regex(kubeletHelp, /--maximum-dead-containers-per-container N/);
});

test('bad values are refused naming the flag', (t) => {
  t.throws(() => parseKubeletArgs(['--minimum-container-ttl-duration=-5s']), {
    message: /^flag --minimum-container-ttl-duration must be a duration of 0 or more/,
  });
  t.throws(() => parseKubeletArgs(['--minimum-container-ttl-duration=soon']), {
    message: /^flag --minimum-container-ttl-duration must be/,
  });
  t.throws(() => parseKubeletArgs(['--maximum-dead-containers-per-container=1.5']), {
    message: /^flag --maximum-dead-containers-per-container must be an integer/,
  });
  t.throws(() => parseKubeletArgs(['--maximum-dead-containers=lots']), {
    message: /^flag --maximum-dead-containers must be an integer/,
  });
});
