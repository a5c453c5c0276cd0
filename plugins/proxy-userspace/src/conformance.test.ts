import test from 'ava';
import { createLogger, RealClock } from '@nodelet/kernel';
import { runProxyConformance } from '@nodelet/proxy/testing';
import { UserspaceBackend } from './backend.js';

runProxyConformance(test, {
  name: 'userspace',
  userspace: () =>
    new UserspaceBackend({
      clock: new RealClock(),
      logger: createLogger({ sink: () => undefined }),
      ports: 'ephemeral',
    }),
});
