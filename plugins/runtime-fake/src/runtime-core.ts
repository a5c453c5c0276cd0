import { createHash } from 'node:crypto';
import { type Clock, errorMessage, invalidInput, type Logger, notFound, unavailable } from '@nodelet/kernel';
import { ContainerConfig, type RuntimeCondition } from '@nodelet/cri';
import { ALL_CONTAINERS, behaviorsFromAnnotations, type ContainerBehavior } from './behavior.js';
import { DEFAULT_CONFIG, type FakeRuntimeConfig } from './config.js';
import { SimulatedNode } from './simulated-node.js';
import { ContainerLifecycle } from './container-lifecycle.js';
import { ContainerLogs } from './container-logs.js';
import { containerView } from './container-view.js';
import { type LogStream, msToNs } from './cri-log.js';
import { defaultExec, type ExecContext, type ExecHandler, type ExecResult } from './exec.js';
import { BUILTIN_IMAGES, ImageTable } from './image-config.js';
import { ImageStore } from './image-store.js';
import { IpAllocator } from './ip-allocator.js';
import { type ContainerRecord, type SandboxRecord } from './records.js';
import { RuntimeStore } from './runtime-store.js';

export const RUNTIME_NAME = 'nodelet-fake';
export const RUNTIME_VERSION = '0.1.0';

export interface FakeRuntimeOptions {
  clock: Clock;
  logger?: Logger;
  config?: FakeRuntimeConfig;
}

/** What a `script()` predicate sees of a container being created. */
export interface ScriptTarget {
  readonly name: string;
  readonly podName: string;
  readonly podNamespace: string;
  readonly podUid: string;
  readonly podSandboxId: string;
  /** The image as CreateContainer named it. */
  readonly image: string;
  readonly labels: { readonly [key: string]: string };
  readonly annotations: { readonly [key: string]: string };
  readonly podLabels: { readonly [key: string]: string };
  readonly podAnnotations: { readonly [key: string]: string };
}

export interface Script {
  matches(target: ScriptTarget): boolean;
  behavior: ContainerBehavior;
}

let instances = 0;

/**
 * The state of a FakeRuntime and what its CRI calls share: the stores, the clock, ids and creation
 * stamps, scripted behaviour and the availability switch. The CRI services are layered on it by area
 * (sandbox-api, container-api, exec-api, stats-api, image-api); FakeRuntime adds the test API on top.
 */
export abstract class FakeRuntimeCore {
  protected readonly clock: Clock;
  protected readonly logger: Logger | undefined;
  protected readonly lifecycle: ContainerLifecycle;
  protected readonly containerLogs: ContainerLogs;
  protected readonly images: ImageStore;
  /** The machine this runtime pretends to run on (its capacity and its own usage). */
  readonly node: SimulatedNode;
  protected ipPool: IpAllocator;
  protected readonly idSalt: string;
  protected idCounter = 0;
  protected lastCreatedNs = 0n;

  protected readonly store = new RuntimeStore();

  protected readonly scripts: Script[] = [];
  protected readonly execHandlers: ExecHandler[] = [];
  protected readonly conditions = new Map<string, RuntimeCondition>([
    ['RuntimeReady', { type: 'RuntimeReady', status: true, reason: '', message: '' }],
    ['NetworkReady', { type: 'NetworkReady', status: true, reason: '', message: '' }],
  ]);
  protected available = true;

  constructor(options: FakeRuntimeOptions) {
    const config = { ...DEFAULT_CONFIG, ...stripUndefined(options.config ?? {}) };
    this.clock = options.clock;
    this.logger = options.logger;
    if (!(Number.isInteger(config.maxLogLines) && config.maxLogLines >= 0)) {
      throw invalidInput(`runtime-fake: maxLogLines must be a whole number >= 0, not ${config.maxLogLines}`);
    }
    this.containerLogs = new ContainerLogs({
      writeLogs: config.writeLogs,
      maxLogLines: config.maxLogLines,
      logger: this.logger,
    });
    this.lifecycle = new ContainerLifecycle(this.clock);
    if (!(Number.isFinite(config.pullLatencyMs) && config.pullLatencyMs >= 0)) {
      throw invalidInput(`runtime-fake: pullLatencyMs must be a number >= 0, not ${config.pullLatencyMs}`);
    }
    let table: ImageTable;
    try {
      table = new ImageTable([...config.images, ...BUILTIN_IMAGES]);
    } catch (err) {
      throw invalidInput(`runtime-fake: ${errorMessage(err)}`);
    }
    this.images = new ImageStore(this.clock, config.pullLatencyMs, table);
    this.node = new SimulatedNode(config.node);
    const field = (name: string, i: number, fn: () => void) => {
      try {
        fn();
      } catch (err) {
        throw invalidInput(`runtime-fake: ${name}[${i}]: ${errorMessage(err)}`);
      }
    };
    config.preloadedImages.forEach((ref, i) => field('preloadedImages', i, () => this.images.add(ref)));
    config.missingImages.forEach((ref, i) =>
      field('missingImages', i, () => this.images.setMissing(ref, true)),
    );
    try {
      this.ipPool = new IpAllocator(config.podCIDR);
    } catch (err) {
      throw invalidInput(`runtime-fake: podCIDR: ${errorMessage(err)}`);
    }
    this.idSalt = `nodelet-fake/${instances++}`;
  }

  protected check(): void {
    if (!this.available) {
      throw unavailable(
        'connection error: desc = "transport: Error while dialing: dial unix /run/nodelet-fake.sock: connect: connection refused"',
      );
    }
  }

  protected mustSandbox(id: string): SandboxRecord {
    const s = this.store.sandbox(id);
    if (!s) throw notFound(`an error occurred when try to find sandbox "${id}": not found`);
    return s;
  }

  protected mustContainer(id: string): ContainerRecord {
    const c = this.store.container(id);
    if (!c) throw notFound(`an error occurred when try to find container "${id}": not found`);
    return c;
  }

  /** 64 hex digits, like containerd's ids; deterministic per runtime instance. */
  protected newId(): string {
    return createHash('sha256').update(`${this.idSalt}/${this.idCounter++}`).digest('hex');
  }

  protected nowNs(): bigint {
    return msToNs(this.clock.now());
  }

  /**
   * The clock's time, moved on by a nanosecond when needed so that creation times are strictly
   * increasing: under a virtual clock many objects are made in the same instant, and the kubelet
   * orders sandboxes and container attempts by creation time.
   */
  protected creationStamp(): bigint {
    let ns = this.nowNs();
    if (ns <= this.lastCreatedNs) ns = this.lastCreatedNs + 1n;
    this.lastCreatedNs = ns;
    return ns;
  }

  protected behaviorLayers(
    sandbox: SandboxRecord,
    config: ContainerConfig,
    image: string,
  ): ContainerBehavior[] {
    const name = config.metadata!.name;
    const layers: ContainerBehavior[] = [];
    const push = (b: ContainerBehavior | undefined) => void (b && layers.push(b));
    push(sandbox.behaviors?.get(ALL_CONTAINERS));
    push(sandbox.behaviors?.get(name));
    const own = behaviorsFromAnnotations(config.annotations);
    push(own?.get(ALL_CONTAINERS));
    push(own?.get(name));
    if (this.scripts.length > 0) {
      const sm = sandbox.metadata;
      const target: ScriptTarget = {
        name,
        podName: sm.name,
        podNamespace: sm.namespace,
        podUid: sm.uid,
        podSandboxId: sandbox.id,
        image,
        labels: config.labels,
        annotations: config.annotations,
        podLabels: sandbox.config.labels,
        podAnnotations: sandbox.config.annotations,
      };
      for (const s of this.scripts) if (s.matches(target)) layers.push(s.behavior);
    }
    return layers;
  }

  protected releaseIp(sandbox: SandboxRecord): void {
    if (sandbox.ip === '') return;
    sandbox.ipPool?.release(sandbox.ip);
    sandbox.ip = '';
  }

  /** Kills the container if it runs, then forgets it. */
  protected forgetContainer(c: ContainerRecord, why: string): void {
    this.lifecycle.kill(c, why);
    this.lifecycle.release(c);
    this.store.deleteContainer(c);
  }

  protected appendLog(c: ContainerRecord, stream: LogStream, text: string): void {
    this.containerLogs.append(c, this.nowNs(), stream, text);
  }

  protected async runExec(containerId: string, cmd: string[], context: ExecContext): Promise<ExecResult> {
    for (const handler of [...this.execHandlers]) {
      const result = await handler(containerId, cmd, context);
      if (result !== undefined) return result;
    }
    const c = this.store.container(containerId);
    return defaultExec(cmd, this.clock, context.signal, c && containerView(c));
  }
}

export function toBuffer(data: string | Uint8Array | undefined): Buffer {
  if (data === undefined) return Buffer.alloc(0);
  return Buffer.from(data); // a copy for bytes, so a handler's buffer is not shared
}

export function withNewline(text: string): string {
  return text.endsWith('\n') ? text : `${text}\n`;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
