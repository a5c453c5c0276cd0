import test from 'ava';
import { effectiveCommand } from './image-config.js';

// The table of the Kubernetes docs ("Define a Command and Arguments for a Container", notes): what runs
// for each combination of the image's Entrypoint/Cmd and the container's command/args. The kubelet
// passes command and args as given; the runtime applies this table (containerd does; the fake too).
const image = { refs: ['example.com/table'], entrypoint: ['/ep-1'], cmd: ['foo', 'bar'] };
const cases: [command: string[], args: string[], runs: string[]][] = [
  [[], [], ['/ep-1', 'foo', 'bar']],
  [['/ep-2'], [], ['/ep-2']],
  [[], ['zoo', 'boo'], ['/ep-1', 'zoo', 'boo']],
  [['/ep-2'], ['zoo', 'boo'], ['/ep-2', 'zoo', 'boo']],
];

for (const [command, args, runs] of cases) {
  test(`command ${JSON.stringify(command)} args ${JSON.stringify(args)} → ${runs.join(' ')}`, (t) => {
    t.deepEqual(effectiveCommand(command, args, image), runs);
  });
}
