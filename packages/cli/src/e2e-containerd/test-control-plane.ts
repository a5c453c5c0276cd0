import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CoreV1Api } from '@kubernetes/client-node';
import { ControlPlane } from '@nodelet/controlplane';
import { createLogger, MemorySink, RealClock } from '@nodelet/kernel';

/**
 * The embedded control plane in the test process (a free port, a temporary data dir) that a
 * `nodelet kubelet` child joins with `--kubeconfig`, and a CoreV1 client of it, as a user's.
 */
export class TestControlPlane {
  private constructor(
    readonly cp: ControlPlane,
    readonly core: CoreV1Api,
    private readonly dataDir: string,
  ) {}

  static async start(): Promise<TestControlPlane> {
    const dataDir = mkdtempSync(join(tmpdir(), 'nodelet-e2e-cp-'));
    const cp = new ControlPlane({
      dataDir,
      clock: new RealClock(),
      logger: createLogger({ sink: new MemorySink().sink }),
      port: 0,
    });
    try {
      await cp.start();
      const k8s = await import('@kubernetes/client-node');
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(cp.kubeconfigPath);
      return new TestControlPlane(cp, kc.makeApiClient(k8s.CoreV1Api), dataDir);
    } catch (err) {
      await cp.stop().catch(() => undefined);
      rmSync(dataDir, { recursive: true, force: true });
      throw err;
    }
  }

  /** A kubeconfig for the node's kubelet. */
  nodeKubeconfig(node: string): Promise<string> {
    return this.cp.nodeKubeconfig(node);
  }

  async stop(): Promise<void> {
    await this.cp.stop();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}
