import test from 'ava';
import { SYSTEM_PATH, systemEnv } from './exec.js';

test('systemEnv puts the system directories first and drops node_modules/.bin, whose packages shadow kernel tools', (t) => {
  const env = systemEnv({
    PATH: '/work/app/node_modules/.bin:/work/node_modules/.bin/:/opt/tools/bin:/usr/bin',
    HOME: '/root',
  });
  t.is(env.PATH, `${SYSTEM_PATH}:/opt/tools/bin:/usr/bin`);
  t.is(env.HOME, '/root');
  t.is(systemEnv({}).PATH, SYSTEM_PATH);
});
