import { chmod, lstat, mkdir, readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { Logger } from '@nodelet/kernel';

/**
 * The data directory holds every Secret (`state.db`), the CA's and every identity's keys (`pki/`) and
 * credentials (kubeconfigs): only its owner may read any of it. Files are written 0600 and directories
 * 0700 explicitly (the umask is not relied on), and at start what an older version, a pre-made directory
 * or a restore left looser is tightened.
 *
 * What "every file" covers: what the control plane writes (`state.db` and SQLite's `-wal`/`-shm`, `pki/`,
 * `kubeconfig`, `bootstrap-kubeconfig`, `users/`, `nodes/*` with its `kubeconfig`) and the directories
 * `nodelet up` makes per node. The trees a kubelet and its runtime own under `nodes/<node>/kubelet` and
 * `nodes/<node>/pods` keep the modes the kubelet gives them: pod volumes must stay usable by a container's
 * non-root user (an emptyDir is 0777, a Secret volume's files have their defaultMode), and a bind mount
 * does not need the host's parent directories to be traversable by that user. Those trees are closed to
 * other users by their 0700 root directories and the 0700 data directory above them.
 */
export const privateDirMode = 0o700;
export const privateFileMode = 0o600;

/** Paths under the data dir that hold only the control plane's secrets and state, tightened recursively. */
const ownedTrees = ['pki', 'users'];
const ownedFiles = ['state.db', 'state.db-wal', 'state.db-shm', 'kubeconfig', 'bootstrap-kubeconfig'];
/** What `nodelet up` keeps in `nodes/<node>/` besides its kubeconfig: kubelet root, pod logs, client CA. */
const nodeletUpNodeEntries = ['kubelet', 'pods', 'client-ca.crt'];

/**
 * Makes the data directory (0700) and tightens what the control plane keeps in it. Returns the paths
 * whose modes were changed, relative to `dataDir`; logs one line naming them when there were any.
 */
export async function securePrivateDataDir(dataDir: string, logger: Logger): Promise<string[]> {
  await mkdir(dataDir, { recursive: true, mode: privateDirMode });
  const tightened: string[] = [];
  const tighten = (path: string) => tightenTree(path, false, tightened);
  await tighten(dataDir);
  for (const file of ownedFiles) await tighten(join(dataDir, file));
  for (const tree of ownedTrees) await tightenTree(join(dataDir, tree), true, tightened);
  const nodes = join(dataDir, 'nodes');
  await tighten(nodes);
  for (const node of await listDir(nodes)) {
    // The node's kubeconfig, and what nodelet up keeps there (see privateNodeDirs): one line for all.
    for (const entry of ['', 'kubeconfig', ...nodeletUpNodeEntries]) await tighten(join(nodes, node, entry));
  }
  reportTightened(dataDir, tightened, logger);
  return tightened;
}

/**
 * The directories `nodelet up` gives a node under the data dir: `nodes/<node>/` itself, the kubelet's
 * root dir (`kubelet/`) and its pod logs (`pods/`), made 0700 before the kubelet starts, or tightened
 * when they exist looser (what is below them is the kubelet's: see above).
 */
export async function privateNodeDirs(dataDir: string, nodeDir: string, logger: Logger): Promise<void> {
  const tightened: string[] = [];
  for (const dir of [nodeDir, join(nodeDir, 'kubelet'), join(nodeDir, 'pods')]) {
    await mkdir(dir, { recursive: true, mode: privateDirMode });
    await tightenTree(dir, false, tightened);
  }
  reportTightened(dataDir, tightened, logger);
}

function reportTightened(dataDir: string, tightened: string[], logger: Logger): void {
  if (tightened.length === 0) return;
  logger.info('tightened permissions under the data directory to owner-only (0700 directories, 0600 files)', {
    dataDir,
    paths: tightened.map((p) => relative(dataDir, p) || '.'),
  });
}

async function tightenTree(path: string, recurse: boolean, tightened: string[]): Promise<void> {
  const info = await lstat(path).catch(() => undefined);
  // Symbolic links are not followed: what they point at is not the data directory's to change.
  if (!info || info.isSymbolicLink()) return;
  // Only group and others lose bits; an owner-only mode is left as it is.
  if (info.mode & 0o077) {
    await chmod(path, info.isDirectory() ? privateDirMode : privateFileMode);
    tightened.push(path);
  }
  if (recurse && info.isDirectory()) {
    for (const entry of await listDir(path)) await tightenTree(join(path, entry), true, tightened);
  }
}

async function listDir(path: string): Promise<string[]> {
  return (await readdir(path).catch(() => [] as string[])).sort();
}
