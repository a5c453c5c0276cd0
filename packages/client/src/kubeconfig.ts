import { existsSync } from 'node:fs';
import * as k8s from '@kubernetes/client-node';
import { errorMessage } from '@nodelet/kernel';
import { checkMaster } from './rest-config.js';

/** Where a client's credentials come from: upstream's `--kubeconfig` and `--master`. */
export interface KubeconfigSource {
  /** A kubeconfig file: its current context. */
  kubeconfig?: string;
  /** An API server URL: replaces the kubeconfig's server, or alone is a server without credentials. */
  master?: string;
}

/**
 * The one kubeconfig loader of nodelet (the kubelet's `--kubeconfig`, the proxy's `--kubeconfig` /
 * `--master`, as upstream's `BuildConfigFromFlags`): the file's current context, with `master`
 * replacing its server; `master` alone is a server without credentials. Every error names the file
 * or flag and what to fix: missing, not YAML, no current context, no cluster server, not a URL.
 *
 * A path alone is the same as `{ kubeconfig: path }`.
 */
export function loadKubeConfig(source: string | KubeconfigSource): k8s.KubeConfig {
  const { kubeconfig, master } = typeof source === 'string' ? { kubeconfig: source } : source;
  if (master !== undefined) checkMaster(master);
  if (!kubeconfig) {
    if (master === undefined) throw new Error('an API client needs a kubeconfig or a master URL');
    return masterOnly(master);
  }
  const kc = new k8s.KubeConfig();
  if (!existsSync(kubeconfig)) throw new Error(`kubeconfig ${kubeconfig}: no such file`);
  try {
    kc.loadFromFile(kubeconfig);
  } catch (err) {
    throw new Error(`kubeconfig ${kubeconfig} could not be loaded: ${errorMessage(err).split('\n')[0]}`);
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) {
    throw new Error(
      `kubeconfig ${kubeconfig} has no current cluster: set current-context to a context whose cluster exists`,
    );
  }
  if (master !== undefined) {
    kc.clusters = kc.clusters.map((c) => (c.name === cluster.name ? { ...c, server: master } : c));
    return kc;
  }
  if (!cluster.server)
    throw new Error(`kubeconfig ${kubeconfig}: cluster ${JSON.stringify(cluster.name)} has no server`);
  try {
    new URL(cluster.server);
  } catch {
    throw new Error(
      `kubeconfig ${kubeconfig}: cluster server ${JSON.stringify(cluster.server)} is not a URL`,
    );
  }
  return kc;
}

function masterOnly(master: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  // client-node refuses plain http unless told TLS is not verified: there is no TLS to verify then.
  const plainHttp = new URL(master).protocol === 'http:';
  kc.loadFromClusterAndUser(
    { name: 'master', server: master, skipTLSVerify: plainHttp },
    { name: 'anonymous' },
  );
  return kc;
}
