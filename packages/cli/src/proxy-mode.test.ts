import test from 'ava';
import { chooseProxyMode, type ProxyModeRequest } from './proxy-mode.js';

const host =
  (...tools: string[]) =>
  (command: string) =>
    tools.includes(command);
const request = (over: Partial<ProxyModeRequest>): ProxyModeRequest => ({
  requested: undefined,
  origin: '--proxy-mode',
  iptablesBackend: 'auto',
  isRoot: true,
  has: host(),
  ...over,
});

test('unasked, the mode follows what the host has: iptables, else nftables, else userspace; not root is userspace', (t) => {
  t.like(chooseProxyMode(request({ has: host('iptables-legacy-restore', 'nft') })), {
    mode: 'iptables',
    reason: 'root, and iptables-legacy-restore is installed',
  });
  t.is(chooseProxyMode(request({ has: host('nft') })).mode, 'nftables');
  const bare = chooseProxyMode(request({}));
  t.is(bare.mode, 'userspace');
  t.regex(
    bare.reason!,
    /neither iptables-restore nor nft is installed; apt-get install iptables or nftables/,
  );
  t.like(chooseProxyMode(request({ isRoot: false, has: host('iptables-nft-restore', 'nft') })), {
    mode: 'userspace',
    reason: 'not root: iptables and nftables need root',
  });
  // A back end pinned to legacy needs the legacy tool.
  t.is(
    chooseProxyMode(request({ iptablesBackend: 'legacy', has: host('iptables-nft-restore', 'nft') })).mode,
    'nftables',
  );
});

test('an asked-for kernel mode whose tool is missing is an error naming where it was asked and the package', (t) => {
  t.throws(() => chooseProxyMode(request({ requested: 'iptables', has: host('nft') })), {
    message:
      '--proxy-mode iptables needs iptables-nft-restore or iptables-legacy-restore or iptables-restore, which this host does not have: install it (apt-get install iptables), or choose nftables or userspace',
  });
  t.throws(() => chooseProxyMode(request({ requested: 'nftables', origin: 'p.yaml: proxy mode' })), {
    message:
      'p.yaml: proxy mode nftables needs nft, which this host does not have: install it (apt-get install nftables), or choose iptables or userspace',
  });
  t.deepEqual(chooseProxyMode(request({ requested: 'userspace' })), { mode: 'userspace' });
  t.deepEqual(chooseProxyMode(request({ requested: 'nftables', has: host('nft') })), { mode: 'nftables' });
});
